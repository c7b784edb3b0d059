"""Workflows: structured ways of working on the one loop, for long autonomous jobs.

A workflow is an object the loop consults (:class:`~anvil.core.workflows.base.Workflow`): the tools of the current
phase, a system-prompt layer, hooks on model calls, tool results and replies that may cause a transition (a fresh
conversation, another tool set, the end of the job), its state in a job directory of plain files, and its events.
The loop runs iterations, approvals, checkpoints, compaction, hooks, the sandbox, loop guards and cost the same way
inside every phase.

- ``base``: the seam (``Workflow``, ``Transition``, ``JobStatus``) and :class:`~anvil.core.workflows.offered.
  OfferedTools`, the registry view the model is offered.
- ``phased``: phased jobs, strategic and tactical phases in turn (``--workflow phased``).
- ``tdd``: the tool-gated TDD workflow, PRs of a master plan test first (``--workflow tdd``).
- ``jobs``: job ids, the job directory, and opening a job's workflow by name.

May import: events, tools. Never the loop (which consults it), a front end or the settings.
"""
