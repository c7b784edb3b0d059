"""The ``[workflows]`` table: where jobs keep their files, and ``[workflows.phased]``.

The runtime hands these to the core as plain values (:class:`anvil.core.workflows.phased.workflow.PhasedSettings`).
None of it is risky in an untrusted project: the tools offered are the session's own (approvals and the sandbox
apply as ever), and the jobs directory must lie inside the project, outside anvil's configuration.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PhasedConfig(BaseModel):
    """``[workflows.phased]``: phased jobs (README: "Workflows")."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    strategic_tools: list[str] | None = None
    """The tools strategic phases offer, by name; unset: reading, searching and writing files (the tools that say
    they suit planning). todo_complete, todo_write and job_complete are always there."""
    tactical_tools: list[str] | None = None
    """The tools tactical phases offer, by name; unset: every tool (edits, commands, tests, web, MCP, sub-agents).
    todo_complete is always there."""
    min_todos: int = Field(5, ge=1)
    """The fewest todos a tactical phase may have (todos.yaml is checked before the phase starts)."""
    max_todos: int = Field(20, ge=1)
    """The most todos a tactical phase may have."""
    max_phases: int = Field(30, ge=0)
    """Phases a job may run, strategic and tactical together, before it stops; 0 for no limit."""
    max_iterations: int = Field(1500, ge=0)
    """Model calls a job may make in all its phases before it stops; 0 for no limit. ``max_iterations`` (the
    top-level setting) still bounds each phase."""
    max_cost: float = Field(0, ge=0)
    """USD a job may spend (at litellm's prices) before it stops; 0 for no limit."""

    @model_validator(mode="after")
    def _todo_range(self) -> PhasedConfig:
        if self.min_todos > self.max_todos:
            raise ValueError(f"a table whose min_todos ({self.min_todos}) is no greater than its max_todos "
                             f"({self.max_todos})")
        return self


class WorkflowsConfig(BaseModel):
    """``[workflows]``: structured ways of working for long jobs (README: "Workflows")."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    jobs_dir: str = ".anvil/jobs"
    """Where jobs keep their files, inside the project: one directory per job. They are work files, not
    configuration: the model writes them."""
    phased: PhasedConfig = Field(default_factory=PhasedConfig)
    """Phased jobs: strategic and tactical phases in turn."""
