"""Assembling a working agent from settings: model, tools, context, policy, session.

Every front end (headless, plain REPL, TUI) builds its agent here, so they share one behaviour.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil import __version__
from anvil.config import Settings, data_dir, permission_files, permission_rules, user_config_dir
from anvil.core.events import TodoItem
from anvil.core.hooks.runner import HOOK_EVENTS, HookRunner
from anvil.core.loop.agent import Agent
from anvil.core.mcp.client import McpManager
from anvil.core.model.errors import RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.protocol import Model, Reasoning
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.prompts import build_system_prompt
from anvil.core.session.checkpoints import FileCheckpointStore
from anvil.core.session.store import Session, SessionState, SessionStore, repair_history
from anvil.core.session.undo import UndoManager
from anvil.core.subagents.agent_types import load_agent_types
from anvil.core.subagents.task_tool import TaskTool
from anvil.core.tools import default_tools
from anvil.core.tools.base import ToolContext, ToolSettings
from anvil.core.tools.interaction import attach_policy
from anvil.core.tools.web.web_tools import web_tools


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
    _closed: bool = False

    async def start(self, *, wait_for_mcp: float | None = None) -> list[str]:
        """After the first paint: session_start hooks, MCP servers. Returns notices for the person.

        ``wait_for_mcp`` (seconds) waits for the servers to be ready or failed, for headless runs that need
        their tools before the first turn; interactive front ends let them come up in the background.
        """
        notices: list[str] = []
        if self.hooks is not None:
            started = await self.hooks.session_start("resume" if self.resumed else "startup")
            notices += started.notices
            if started.additional_context:  # what the hook knows joins the system prompt, for every turn
                self.agent.messages[0]["content"] += "\n\n# From a session_start hook\n\n" + started.additional_context
        if self.mcp is not None and self.mcp.servers:
            await self.mcp.start()
            if wait_for_mcp:
                await self.mcp.wait_started(wait_for_mcp)
                self.mcp.sync_registry(self.agent.tools)
        return notices

    async def switch_model(self, name: str) -> str | None:
        """Use model ``name`` from the next call on (both front ends' /model). Returns what its preflight
        found wrong (a missing key, an unknown name), which the switch does not prevent."""
        settings = self.settings.model_copy(update={"model": name})
        model = await asyncio.to_thread(build_model, settings)  # building a litellm model may import it
        problem = await asyncio.to_thread(model.preflight)
        self.settings = settings
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
            if self.hooks is not None:
                await self.hooks.session_end(reason)
            if self.mcp is not None:
                await self.mcp.close()
            await self.agent.ctx.close()
        finally:
            self.session.close()


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


def tool_settings(settings: Settings, root: Path) -> ToolSettings:
    allowed = [(root / Path(d).expanduser()).resolve() for d in settings.allowed_dirs]
    return ToolSettings(allowed_dirs=allowed, lint=dict(settings.lint), test_command=settings.test_command,
                        output_budget=settings.output_budget)


def open_runtime(settings: Settings, root: Path, *, resume: str | None = None, continue_latest: bool = False,
                 model: Model | None = None, interactive: bool = True) -> Runtime:
    """Raises SessionError / ModelError with a message for the person when something is wrong."""
    root = root.resolve()
    store = SessionStore(data_dir(), root)
    warnings: list[str] = []
    state: SessionState | None = None
    session: Session | None = None
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
    ctx = ToolContext(root=root, data_dir=data_dir(), session_id=session.id,
                      settings=tool_settings(settings, root), checkpoints=checkpoints)
    system_prompt, memory = build_system_prompt(root, user_config_dir())
    if memory.truncated:
        warnings.append("Project memory (AGENTS.md, CLAUDE.md, ANVIL.md) is over 32 KiB; the rest was cut.")
    history = repair_history(state.messages) if state else []
    tools = default_tools()
    for tool in web_tools(os.environ, settings.web):
        tools.add(tool)
    policy = ApprovalPolicy(settings.auto_approve, rule_lists=permission_rules(settings, root),
                            files=permission_files(root), ask_edits=settings.ask_edits, mode=settings.mode)
    attach_policy(ctx, policy)  # exit_plan_mode switches the mode back when a plan is approved
    hooks = HookRunner(settings.hooks, root, session.id) if _any_hooks(settings) else None
    agent = Agent(model, tools, ctx, system_prompt=system_prompt, policy=policy, session=session,
                  max_iterations=settings.max_iterations, history=history,
                  compact_threshold=settings.compact_threshold, verify=list(settings.verify),
                  verify_retries=settings.verify_retries, verify_timeout=settings.verify_timeout, hooks=hooks,
                  interactive=interactive)
    agent_types, type_warnings = load_agent_types(root, settings.agents,
                                                  dirs=[user_config_dir() / "agents", root / ".anvil" / "agents"])
    warnings.extend(type_warnings)
    tools.add(TaskTool(lambda: agent.model, tools, policy, types=agent_types,
                       max_iterations=settings.subagent_max_iterations,
                       compact_threshold=settings.compact_threshold, on_usage=lambda usage: _add_usage(agent, usage)))
    runtime = Runtime(settings, root, agent, session, store, warnings, state, hooks,
                      undo=UndoManager(checkpoints, root))
    if settings.mcp_servers:
        runtime.mcp = McpManager(settings.mcp_servers, root, log_dir=data_dir() / "mcp",
                                 on_message=lambda message: runtime.notify(message),
                                 on_change=lambda: runtime.mcp and runtime.mcp.sync_registry(tools))
    if state is not None:
        agent.turn = state.turns
        agent.usage.restore({**vars(state), "cost": state.total_cost})
        ctx.todos = [TodoItem(**t) for t in state.todos if isinstance(t, dict)]
    return runtime


def _any_hooks(settings: Settings) -> bool:
    return any(settings.hooks.for_event(event) for event in HOOK_EVENTS)


def _add_usage(agent: Agent, usage: dict[str, Any]) -> None:
    """A sub-agent's tokens and cost count in the session's totals."""
    agent.usage.merge(usage)
