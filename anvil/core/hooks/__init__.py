"""Hooks: the person's shell commands run at points of a session, and how their output steers it.

May import: events, tools.base (results only).
"""
