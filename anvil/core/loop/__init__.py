"""The ReAct loop and what runs inside one turn: the agent, one tool call, interrupts, loop guards,
stage words, compaction steps, replies cut off at the output limit, usage totals, and the final verification.

May import: events, model, context, policy, session, hooks, tools, prompts. Nothing imports it but the
front-end layer, runtime and sub-agents.
"""
