"""The OS sandbox for everything the model runs: commands, tests, background jobs, lint and verify commands.

- ``places``: what a sandboxed command may write (the project, a private temp dir, allowed_dirs, package caches,
  ``[sandbox] writable``), what stays read-only inside that (anvil's configuration and data, what git reads as
  configuration: ``git_places``, the scripts hooks and MCP servers run) and what is hidden (sockets in ``/run``
  and the temp dir), as a plan of mounts.
- ``limits``: the cap on a command's processes (a pids cgroup, or RLIMIT_NPROC).
- ``bwrap``: the plan as bubblewrap arguments (Linux); ``seatbelt``: as a sandbox-exec profile (macOS).
- ``sandbox``: the object tools hold: the mode, whether a sandbox is available, launching a command in it.
- ``blocked``: recognising, in a failed command's output, what the sandbox refused.
- ``lifetime``: ending every process an unsandboxed command started, ``setsid`` daemons included.
- ``proxy``: the way out for a sandbox without network to a list of hosts.

May import: process_groups, private_files. Never the tools, the policy, the loop or the settings layer:
settings arrive as plain values (:class:`~anvil.core.sandbox.places.SandboxSettings`).
"""
