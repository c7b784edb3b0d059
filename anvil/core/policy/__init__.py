"""The approval policy: modes, verdicts, allow/deny rules, command risk, and the shell parsing they
need. It explains and asks; the OS sandbox is what enforces.

May import: events, tools.base. Never the settings layer: rules and paths arrive as plain values.
"""
