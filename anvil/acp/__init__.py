"""`anvil acp`: anvil as an Agent Client Protocol agent, for editors (Zed, JetBrains, Neovim plugins, Toad).

The editor (the ACP client) starts ``anvil acp`` and speaks JSON-RPC over its stdin and stdout; this package
answers on the official SDK (``agent-client-protocol``, imported as ``acp``), on the same session facade as
the other front ends. What is here:

- ``server``: the process: stdout kept for JSON-RPC alone, the connection, the command line.
- ``agent``: the protocol's methods (initialize, session/new, session/load, session/prompt, session/cancel,
  session/set_mode, session/list) and the sessions they open.
- ``turn``: one prompt turn: anvil's events out as session updates, approvals and questions in as permission
  requests.
- ``updates``, ``permissions``, ``prompt``, ``replay``: the translations between anvil's words and ACP's.
- ``editor``: what the editor offers the tools: its unsaved buffers (fs/read_text_file) and its terminal.

May import: the facade, the runtime and settings, ``anvil.frontend``, the core's events, and ``acp``. No other
front end imports it, and the core never does.
"""
