"""Task runs: a Markdown task file with a YAML header, its layer of the system prompt, its state between runs
(status, blockers and their answers), and one run of it on an agent.

May import: loop (the agent, escalation), tools (interaction), session (the project slug), events and
private_files. Nothing here imports a front end; ``anvil -p --task``, ``/task`` and ``anvil answer`` drive it.
"""
