"""What every front end shares: slash commands, event one-liners, prompt preparation (@mentions, MCP
resources) and exports. Renders nothing itself; imports no UI library.
"""
