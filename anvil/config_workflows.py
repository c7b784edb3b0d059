"""The ``[workflows]`` table: where jobs keep their files, ``[workflows.phased]`` and ``[workflows.tdd]``.

The runtime hands these to the core as plain values (:class:`anvil.core.workflows.phased.workflow.PhasedSettings`,
:class:`anvil.core.workflows.tdd.workflow.TddSettings`). Most of it is harmless in an untrusted project: the tools
offered are the session's own (approvals and the sandbox apply as ever), and the jobs directory must lie inside the
project, outside anvil's configuration. ``[workflows.tdd]``'s ``preflight`` and ``review_command`` run commands, so a
project sets them only once trusted (``anvil.trust``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from anvil.core.workflows.phased.workflow import PhasedSettings
    from anvil.core.workflows.tdd.workflow import TddSettings


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

    def plain(self) -> PhasedSettings:
        """As the core takes it."""
        from anvil.core.workflows.phased.logic import Limits
        from anvil.core.workflows.phased.workflow import PhasedSettings

        return PhasedSettings(
            tuple(self.strategic_tools) if self.strategic_tools is not None else None,
            tuple(self.tactical_tools) if self.tactical_tools is not None else None,
            Limits(self.min_todos, self.max_todos, self.max_phases or None, self.max_iterations or None,
                   self.max_cost or None))

    @model_validator(mode="after")
    def _todo_range(self) -> PhasedConfig:
        if self.min_todos > self.max_todos:
            raise ValueError(f"a table whose min_todos ({self.min_todos}) is no greater than its max_todos "
                             f"({self.max_todos})")
        return self


class TddConfig(BaseModel):
    """``[workflows.tdd]``: the tool-gated TDD workflow (README: "Workflows")."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    plan_path: str = Field("docs/Plan_Doc/Active_Plan.md", min_length=1)
    """The master plan, relative to the project: the PRs to implement, marked [DONE] as they are merged."""
    preflight: list[str] | None = None
    """Commands a passing GREEN or REFACTOR step must also pass, in order; unset: the ``verify`` commands, else the
    project's test command."""
    scope_reduction_after: int = Field(6, ge=1)
    """Failed attempts on one step before request_scope_reduction unlocks."""
    escalate_after: int = Field(10, ge=1)
    """Failed attempts on one step before escalate_for_external_help unlocks (on a task a re-plan wrote:
    scope_reduction_after)."""
    review_command: str | None = None
    """A command that reviews the branch instead of anvil's review sub-agent: it prints ``{"findings": [...]}``
    (ANVIL_ACTIVE_PR, ANVIL_MAIN_BRANCH and ANVIL_PR_BRANCH say what to review)."""
    main_branch: str | None = None
    """The branch PRs start from and merge into; unset: origin's default branch, else main, else master."""

    def plain(self, verify: list[str], timeout: float) -> TddSettings:
        """As the core takes it, with the project's ``verify`` commands (the default preflight gate) and their
        timeout."""
        from anvil.core.workflows.tdd.machine import Limits
        from anvil.core.workflows.tdd.workflow import TddSettings

        return TddSettings(self.plan_path, tuple(self.preflight) if self.preflight is not None else None,
                           tuple(verify), Limits(self.scope_reduction_after, self.escalate_after),
                           self.review_command or None, self.main_branch or None, timeout)

    @model_validator(mode="after")
    def _thresholds(self) -> TddConfig:
        if self.scope_reduction_after > self.escalate_after:
            raise ValueError(f"a table whose scope_reduction_after ({self.scope_reduction_after}) is no greater than "
                             f"its escalate_after ({self.escalate_after})")
        return self


class WorkflowsConfig(BaseModel):
    """``[workflows]``: structured ways of working for long jobs (README: "Workflows")."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    jobs_dir: str = ".anvil/jobs"
    """Where jobs keep their files, inside the project: one directory per job. They are work files, not
    configuration: the model writes them."""
    phased: PhasedConfig = Field(default_factory=PhasedConfig)
    """Phased jobs: strategic and tactical phases in turn."""
    tdd: TddConfig = Field(default_factory=TddConfig)
    """The TDD workflow: PRs from a master plan, test first, reviewed, squashed and merged."""
