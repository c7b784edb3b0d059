"""`anvil --plain`: a prompt_toolkit line REPL that keeps the terminal's own scrollback.
"""
