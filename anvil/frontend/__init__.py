"""What every front end shares: the slash commands and the effects they return, event one-liners, prompt
preparation (@mentions, MCP resources) and exports. Renders nothing itself; imports no UI library.
"""
