"""Sub-agents: their types (built in, from config, from .anvil/agents/*.md) and the ``task`` tool that
runs one on the same loop with a fresh context.

May import: loop, model, policy, tools, events.
"""
