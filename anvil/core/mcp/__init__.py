"""MCP servers: their configuration, connections kept for the session, their tools as anvil tools, their
resources and prompts. The ``mcp`` package is imported only when a server is configured.

May import: events, tools.
"""
