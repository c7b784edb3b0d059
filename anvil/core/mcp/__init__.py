"""MCP servers: their configuration, connections kept for the session, and their tools as anvil tools.
The ``mcp`` package is imported only when a server is configured.

May import: events, tools.
"""
