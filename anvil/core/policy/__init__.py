"""The approval policy: modes, verdicts, allow/deny rules, command risk, and the shell parsing they
need. It explains and asks; the OS sandbox is what enforces.

May import: events, tools.base and the path helpers beside it (tools.paths, tools.protected, tools.errors).
Never the settings layer: rules and paths arrive as plain values.
"""
