"""Assembling a working agent from settings: model, tools, context, policy, session.

Every front end (headless, plain REPL, TUI) builds its agent here, so they share one behaviour.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from anvil import __version__
from anvil.config import (
    Settings,
    data_dir,
    keep_trusted_after_saving,
    permission_files,
    permission_rules,
    project_files_trusted,
    project_trust,
    user_config_dir,
)
from anvil.core.events import TodoItem
from anvil.core.hooks.runner import HookRunner
from anvil.core.loop.agent import Agent
from anvil.core.loop.autofix import DEFAULT_FIXERS
from anvil.core.masking import SecretMasker, is_secret_name, secrets_from_environment
from anvil.core.mcp.manager import McpManager
from anvil.core.model.errors import RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel, settle_model_calls
from anvil.core.model.protocol import Model, Reasoning
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.policy.script_refs import referenced_files
from anvil.core.private_files import tighten_tree
from anvil.core.prompts import build_system_prompt
from anvil.core.sandbox.places import Places, SandboxSettings
from anvil.core.sandbox.sandbox import Sandbox
from anvil.core.session.checkpoints import FileCheckpointStore
from anvil.core.session.retention import expire_checkpoints
from anvil.core.session.store import Session, SessionState, SessionStore, repair_history
from anvil.core.session.undo import UndoManager
from anvil.core.subagents.agent_types import AgentType, load_agent_types
from anvil.core.subagents.task_tool import TaskTool
from anvil.core.tools import default_tools
from anvil.core.tools.base import ToolContext, ToolSettings
from anvil.core.tools.edit.styles import offer_edit_tools
from anvil.core.tools.files.leftovers import clean_leftovers
from anvil.core.tools.interaction import attach_policy
from anvil.core.tools.web.web_tools import web_tools
from anvil.core.workflows.base import JobError, SubagentRunner, Workflow
from anvil.core.workflows.jobfiles import new_job_id
from anvil.core.workflows.jobs import WORKFLOWS, job_directory, jobs_root
from anvil.trust import configured_commands, ignored_notice


@dataclass
class Runtime:
    settings: Settings
    root: Path
    agent: Agent
    session: Session
    store: SessionStore
    warnings: list[str]
    resumed: SessionState | None = None
    hooks: HookRunner | None = None
    mcp: McpManager | None = None
    undo: UndoManager | None = None
    #: what happens in the background (an MCP server failing) is told to the person through this
    notify: Callable[[str], Any] = field(default=lambda message: None)
    #: the secret values masked in what anvil writes (headless output among it)
    secrets: SecretMasker = field(default_factory=SecretMasker)
    #: how workflows run a sub-agent (the TDD workflow's code review)
    subagents: SubagentRunner | None = None
    _closed: bool = False

    async def start(self, *, wait_for_mcp: float | None = None) -> list[str]:
        """After the first paint: leftovers of a killed run, session_start hooks, MCP servers. Returns notices for
        the person.

        ``wait_for_mcp`` (seconds) waits for the servers to be ready or failed, for headless runs that need
        their tools before the first turn; interactive front ends let them come up in the background.
        """
        # Partial files a killed anvil left in this project (its temporary files for atomic writes).
        notices: list[str] = await asyncio.to_thread(clean_leftovers, self.agent.ctx.data_dir, self.root)
        await asyncio.to_thread(expire_checkpoints, self.store.data_dir, self.settings.checkpoint_retention_days,
                                keep={self.session.id})
        if self.hooks is not None:
            started = await self.hooks.session_start("resume" if self.resumed else "startup")
            notices += started.notices
            if started.additional_context:  # what the hook knows joins the system prompt, for every turn
                self.agent.set_system_section("session_start", "# From a session_start hook\n\n"
                                              + started.additional_context)
        if self.mcp is not None and self.mcp.servers:
            await self.mcp.start()
            if wait_for_mcp:
                await self.mcp.wait_started(wait_for_mcp)
                self.mcp.sync_registry(self.agent.tools)
        return notices

    def jobs_dir(self) -> Path:
        """Where this project's jobs keep their files (``[workflows] jobs_dir``); JobError when it may not."""
        return jobs_dir(self.settings, self.root)

    def start_job(self, name: str, instructions: str) -> Workflow:
        """A new job of workflow ``name`` for ``instructions``, attached to this session; JobError if it cannot be."""
        kind = WORKFLOWS.get(name)
        if kind is None:
            raise JobError(f"There is no workflow called {name!r}; the workflows are: {', '.join(WORKFLOWS)}.")
        if kind.needs_instructions and not instructions.strip():
            raise JobError("A job needs instructions: say what the job is for (or give --instructions FILE).")
        if self.agent.workflow is not None:
            raise JobError(f"This session works on job {self.agent.workflow.job_id} already: /workflow stop ends it, "
                           "or start the new job in a new session.")
        directory = job_directory(self.jobs_dir(), new_job_id())
        workflow = kind.start(self.root, directory, instructions, workflow_settings(self.settings, name))
        if self.subagents is not None:
            workflow.use_subagents(self.subagents)
        self.agent.attach_workflow(workflow)
        return workflow

    async def switch_model(self, name: str) -> str | None:
        """Use model ``name`` from the next call on (both front ends' /model). Returns what its preflight
        found wrong (a missing key, an unknown name), which the switch does not prevent."""
        settings = self.settings.model_copy(update={"model": name})
        model = await asyncio.to_thread(build_model, settings)  # building a litellm model may import it
        problem = await asyncio.to_thread(model.preflight)
        self.settings = settings
        offer_edit_tools(self.agent.tools, settings.edit_tools, name)
        # The agent's own switch keeps the meter compaction measures against and gives it the new window and
        # tokenizer.
        self.agent.set_model(model)
        return problem

    async def close(self, reason: str = "exit") -> None:
        """End the session: session_end hooks, MCP servers, background commands, the session file."""
        if self._closed:
            return
        self._closed = True
        try:
            await settle_model_calls()  # model calls an interrupt left behind, before the loop ends them
            if self.hooks is not None:
                await self.hooks.session_end(reason)
            if self.mcp is not None:
                await self.mcp.close()
            await self.agent.ctx.close()
        finally:
            self.session.close()
            told = self.session.trouble.take()  # what a full disk kept from the files to the end
            if self.undo is not None:
                self.undo.store.close()
                told += self.undo.store.take_notices()
            for trouble in self.agent.ctx.troubles:  # the command logs
                told += trouble.take()
            for message in told:
                self.notify(message)


def build_model(settings: Settings) -> Model:
    if settings.model == "scripted" or settings.model.startswith("scripted:"):
        model = ScriptedModel.from_spec(settings.model)
        if settings.context_window:
            model.window = settings.context_window
        model.reasoning = Reasoning(settings.reasoning, settings.thinking_budget)
        return model
    return LiteLLMModel(settings.model, api_base=settings.api_base,
                        retry=RetryPolicy(max_attempts=settings.max_retries + 1),
                        context_window_override=settings.context_window,
                        reasoning=Reasoning(settings.reasoning, settings.thinking_budget),
                        max_output_tokens=settings.max_output_tokens, retry_output_tokens=settings.retry_output_tokens)


def fixers(autofix: bool | dict[str, list[str]]) -> dict[str, tuple[str, ...]] | None:
    """The automatic fixers from the ``autofix`` setting: none, the defaults, or the defaults with the
    languages the table names replaced (an empty list turns a language's off)."""
    if autofix is False:
        return None
    table = dict(DEFAULT_FIXERS)
    if isinstance(autofix, dict):
        table.update({key: tuple(commands) for key, commands in autofix.items()})
    return {key: commands for key, commands in table.items() if commands}


def tool_settings(settings: Settings, root: Path) -> ToolSettings:
    allowed = [(root / Path(d).expanduser()).resolve() for d in settings.allowed_dirs]
    limits = settings.commands
    return ToolSettings(allowed_dirs=allowed, lint=dict(settings.lint), test_command=settings.test_command,
                        output_budget=settings.output_budget, config_dirs=[user_config_dir()],
                        log_cap=int(limits.log_max_mb * 1024 * 1024),
                        logs_total_cap=int(limits.logs_total_mb * 1024 * 1024),
                        background_timeout=limits.background_timeout)


def outside_scripts(settings: Settings, root: Path, *, sandboxed: bool) -> list[Path]:
    """The project files that run outside the sandbox without asking: those hooks and MCP servers run, and, when
    commands are not sandboxed, those lint, verify and test_command run (:mod:`anvil.core.policy.script_refs`).
    The file tools ask before writing them and the sandbox keeps them read-only."""
    servers = {name: server.model_dump() for name, server in settings.mcp_servers.items()}
    tables: dict[str, Any] = {"hooks": settings.hooks.model_dump(), "mcp_servers": servers}
    if not sandboxed:
        tables.update(lint=dict(settings.lint), verify=list(settings.verify), test_command=settings.test_command)
    found: list[Path] = []
    for command, cwd in configured_commands(tables):
        found += [path for path in referenced_files(command, root, cwd) if path not in found]
    return found


def build_sandbox(settings: Settings, root: Path, allowed_dirs: list[Path], session_id: str) -> Sandbox:
    """The OS sandbox for the session's commands, from ``[sandbox]``."""
    config = settings.sandbox
    hosts = tuple(config.network) if isinstance(config.network, list) else ()
    sandbox_settings = SandboxSettings(
        mode=config.mode, network=config.network is True, hosts=hosts, writable_caches=config.writable_caches,
        max_processes=config.max_processes,
        writable=tuple((root / Path(p).expanduser()).resolve() for p in config.writable))
    places = Places(root, tuple(allowed_dirs), config_dir=user_config_dir(), data_dir=data_dir(),
                    scripts=tuple(outside_scripts(settings, root, sandboxed=True)))
    return Sandbox(sandbox_settings, places, session_id=session_id)


def open_runtime(settings: Settings, root: Path, *, resume: str | None = None, continue_latest: bool = False,
                 model: Model | None = None, interactive: bool = True,
                 resume_job: tuple[str, str] | None = None) -> Runtime:
    """Raises SessionError / ModelError / JobError with a message for the person when something is wrong.

    ``resume_job`` (workflow, job id) goes on with that job: in the session that worked on it last, when it is
    still there, else in a new one."""
    root = root.resolve()
    tighten_tree(data_dir())  # 0700/0600, also for what an older anvil wrote; cheap after the first start
    masker = secret_masker(settings)
    store = SessionStore(data_dir(), root, masker)
    warnings: list[str] = settings.import_notes  # what .claude/settings.json or .mcp.json could not give
    state: SessionState | None = None
    session: Session | None = None
    job = open_job(settings, root, *resume_job) if resume_job is not None else None
    if job is not None:
        resume = _job_session(store, job, warnings)
    if resume:
        session = store.open(resume)
    elif continue_latest:
        session = store.latest()
        if session is None:
            warnings.append(f"No earlier session in {root}; starting a new one.")
    if session is not None:
        state = session.load()
        warnings.extend(state.warnings)
    else:
        session = store.create(settings.model, __version__)
    model = model or build_model(settings)
    checkpoints = FileCheckpointStore(data_dir() / "checkpoints" / store.dir.name / session.id)
    tools_settings = tool_settings(settings, root)
    sandbox = build_sandbox(settings, root, tools_settings.allowed_dirs, session.id)
    tools_settings.outside_scripts = outside_scripts(settings, root, sandboxed=sandbox.active)
    if notice := sandbox.status.notice():
        warnings.append(notice)
    ctx = ToolContext(root=root, data_dir=data_dir(), session_id=session.id, settings=tools_settings,
                      checkpoints=checkpoints, sandbox=sandbox, secrets=masker)
    ctx.cleanups.append(sandbox.close)  # first in, last out: background commands stop before its temp dir goes
    warnings.extend(session.trouble.take())  # the session file could not even be started (a full disk)
    system_prompt, memory = build_system_prompt(root, user_config_dir())
    if memory.truncated:
        warnings.append("Project memory (AGENTS.md, CLAUDE.md, ANVIL.md) is over 32 KiB; the rest was cut.")
    history = repair_history(state.messages) if state else []
    tools = default_tools()
    offer_edit_tools(tools, settings.edit_tools, settings.model)
    for tool in web_tools(os.environ, settings.web):
        tools.add(tool)
    check = project_trust(root)
    trusted = project_files_trusted(settings, root, check)
    if check.items and not trusted:
        warnings.append(ignored_notice(check, trusted_at_start=settings.project_trust.trusted))
    policy = _TrustKeepingPolicy(settings, root, rule_lists=permission_rules(settings, root),
                                 files=permission_files(root), ask_edits=settings.ask_edits, mode=settings.mode)
    attach_policy(ctx, policy)  # exit_plan_mode switches the mode back when a plan is approved
    hooks = HookRunner(settings.hooks, root, session.id, transcript_path=session.path,
                       mode=lambda: policy.mode) if settings.hooks.any() else None
    agent = Agent(model, tools, ctx, system_prompt=system_prompt, policy=policy, session=session,
                  max_iterations=settings.max_iterations, history=history,
                  compact_threshold=settings.compact_threshold, verify=list(settings.verify),
                  verify_retries=settings.verify_retries, verify_timeout=settings.verify_timeout, hooks=hooks,
                  interactive=interactive, mask_secrets_for_model=settings.mask_secrets_for_model,
                  autofix=fixers(settings.autofix))
    agent_types, type_warnings = _agent_types(settings, root, trusted)
    warnings.extend(type_warnings)
    task_tool = TaskTool(lambda: agent.model, tools, policy, types=agent_types,
                         max_iterations=settings.subagent_max_iterations,
                         compact_threshold=settings.compact_threshold, on_usage=lambda usage: _add_usage(agent, usage))
    tools.add(task_tool)
    runtime = Runtime(settings, root, agent, session, store, warnings, state, hooks,
                      undo=UndoManager(checkpoints, root), secrets=masker, subagents=task_tool.run_agent)
    if settings.mcp_servers:
        runtime.mcp = McpManager(settings.mcp_servers, root, log_dir=data_dir() / "mcp",
                                 on_message=lambda message: runtime.notify(message),
                                 on_change=lambda: _mcp_changed(runtime))
    if state is not None:
        agent.turn = state.turns
        agent.usage.restore({**vars(state), "cost": state.total_cost})
        # The gauge starts from the last measure the session recorded, marked estimated until the next call.
        agent.context.used, agent.context.estimated = state.context_used, True
        ctx.todos = [TodoItem(**t) for t in state.todos if isinstance(t, dict)]
    if job is None and state is not None and state.workflow:
        job = _session_job(settings, root, state.workflow, warnings)
    if job is not None:
        job.use_subagents(task_tool.run_agent)
        agent.attach_workflow(job)
    return runtime


def jobs_dir(settings: Settings, root: Path) -> Path:
    return jobs_root(root.resolve(), settings.workflows.jobs_dir, [user_config_dir()], data_dir())


def workflow_settings(settings: Settings, name: str) -> Any:
    """Workflow ``name``'s settings (``[workflows.NAME]``) as the plain values the core takes."""
    workflows = settings.workflows
    return workflows.phased.plain() if name == "phased" else workflows.tdd.plain(settings.verify,
                                                                                 settings.verify_timeout)


def open_job(settings: Settings, root: Path, name: str, job_id: str) -> Workflow:
    """Job ``job_id`` of workflow ``name``, to go on with; JobError when there is none or it is complete."""
    kind = WORKFLOWS.get(name)
    if kind is None:
        raise JobError(f"There is no workflow called {name!r}; the workflows are: {', '.join(WORKFLOWS)}.")
    workflow = kind.open(root.resolve(), job_directory(jobs_dir(settings, root), job_id),
                         workflow_settings(settings, name))
    status = workflow.status()
    if status.status == "complete":
        raise JobError(f"Job {job_id} is complete; its files are in {status.job_dir}. Start a new job for more work.")
    return workflow


def _job_session(store: SessionStore, job: Workflow, warnings: list[str]) -> str | None:
    """The session that worked on ``job`` last, to resume its conversation; None (a new one) when it is gone."""
    session_id = job.status().session_id
    if session_id and (store.dir / f"{session_id}.jsonl").is_file():
        return session_id
    if session_id:
        warnings.append(f"The session that worked on job {job.job_id} last ({session_id}) is gone; the job goes on "
                        "in a new one, from its files.")
    return None


def _session_job(settings: Settings, root: Path, record: dict[str, Any], warnings: list[str]) -> Workflow | None:
    """The job a resumed session worked on, attached again; None (and why) when it cannot be."""
    name, job_dir = str(record.get("workflow", "")), Path(str(record.get("job_dir", "")))
    kind = WORKFLOWS.get(name)
    try:
        if kind is None:
            raise JobError(f"this anvil has no workflow called {name!r}")
        workflow = kind.open(root.resolve(), job_dir, workflow_settings(settings, name))
    except JobError as exc:
        warnings.append(f"This session worked on a job that cannot go on ({exc}); it continues as a plain "
                        "conversation.")
        return None
    status = workflow.status()
    if status.status == "complete":
        return None
    warnings.append(f"This session works on job {status.job_id} ({status.label}, {status.status}): your next message "
                    "goes on with it, as guidance. /workflow shows it; /workflow stop ends it.")
    return workflow


class _TrustKeepingPolicy(ApprovalPolicy):
    """A rule the person saves to a trusted project keeps the folder trusted: anvil wrote it at their word."""

    def __init__(self, settings: Settings, root: Path, **options: Any) -> None:
        super().__init__(settings.auto_approve, **options)
        self.settings, self.root = settings, root

    def remember(self, tool: str, pattern: str, scope: str, effect: Literal["allow", "deny"] = "allow") -> None:
        keep = scope == "project" and project_files_trusted(self.settings, self.root)
        super().remember(tool, pattern, scope, effect)
        if keep:
            keep_trusted_after_saving(self.settings, self.root)


def _agent_types(settings: Settings, root: Path, trusted: bool) -> tuple[dict[str, AgentType], list[str]]:
    """Built-in < configured < the user's agent files < the project's; from an untrusted project only the
    agents that cannot change anything."""
    dirs = [user_config_dir() / "agents", root / ".anvil" / "agents"]
    types, warnings = load_agent_types(root, settings.agents, dirs=dirs if trusted else dirs[:1])
    if not trusted:
        project, more = load_agent_types(root, {}, dirs=dirs[1:])
        types.update({name: agent for name, agent in project.items() if agent.source != "built-in" and agent.read_only})
        warnings += more
    return types, warnings


def secret_masker(settings: Settings, environ: dict[str, str] | None = None) -> SecretMasker:
    """The secrets anvil knows: environment variables named like secrets (provider keys among them) and the keys
    in its settings (web search, MCP server environments and headers)."""
    masker = SecretMasker(secrets_from_environment(os.environ if environ is None else environ))
    masker.extend([("web.brave_api_key", settings.web.brave_api_key),
                   ("web.tavily_api_key", settings.web.tavily_api_key)])
    for name, server in settings.mcp_servers.items():
        masker.extend((f"mcp_servers.{name}.env.{key}", value) for key, value in server.env.items()
                      if is_secret_name(key))
        masker.extend((f"mcp_servers.{name}.headers.{key}", value.split()[-1]) for key, value in server.headers.items()
                      if value.split() and (key.lower() in {"authorization", "x-api-key", "api-key"}
                                            or is_secret_name(key)))
    return masker


def _add_usage(agent: Agent, usage: dict[str, Any]) -> None:
    """A sub-agent's tokens and cost count in the session's totals."""
    agent.usage.merge(usage)


def _mcp_changed(runtime: Runtime) -> None:
    """A server became ready, failed or changed its tools: the registry and its instructions follow."""
    if runtime.mcp is not None:
        runtime.mcp.sync_registry(runtime.agent.tools)
        runtime.agent.set_system_section("mcp", runtime.mcp.instructions_text())
