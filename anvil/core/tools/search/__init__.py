"""The search tools (grep, glob, list_files): ripgrep with a pure-Python fallback, gitignore rules.
"""
