"""Assembling a working agent from settings: model, tools, context, policy, session.

Every front end (headless, plain REPL, TUI) builds its agent here, so they share one behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from anvil import __version__
from anvil.config import Settings, data_dir, user_config_dir
from anvil.core.agent import Agent
from anvil.core.approval import ApprovalPolicy
from anvil.core.checkpoints import FileCheckpointStore
from anvil.core.events import TodoItem
from anvil.core.model import LiteLLMModel, Model, RetryPolicy
from anvil.core.prompts import build_system_prompt
from anvil.core.scripted import ScriptedModel
from anvil.core.session import Session, SessionState, SessionStore, repair_history
from anvil.core.tools import default_tools
from anvil.core.tools.base import ToolContext, ToolSettings


@dataclass
class Runtime:
    settings: Settings
    root: Path
    agent: Agent
    session: Session
    store: SessionStore
    warnings: list[str]
    resumed: SessionState | None = None


def build_model(settings: Settings) -> Model:
    if settings.model == "scripted" or settings.model.startswith("scripted:"):
        model = ScriptedModel.from_spec(settings.model)
        if settings.context_window:
            model.window = settings.context_window
        return model
    return LiteLLMModel(settings.model, api_base=settings.api_base,
                        retry=RetryPolicy(max_attempts=settings.max_retries + 1),
                        context_window_override=settings.context_window)


def tool_settings(settings: Settings, root: Path) -> ToolSettings:
    allowed = [(root / Path(d).expanduser()).resolve() for d in settings.allowed_dirs]
    return ToolSettings(allowed_dirs=allowed, lint=dict(settings.lint), test_command=settings.test_command,
                        output_budget=settings.output_budget)


def open_runtime(settings: Settings, root: Path, *, resume: str | None = None, continue_latest: bool = False,
                 model: Model | None = None) -> Runtime:
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
    ctx = ToolContext(root=root, data_dir=data_dir(), session_id=session.id,
                      settings=tool_settings(settings, root),
                      checkpoints=FileCheckpointStore(data_dir() / "checkpoints" / store.dir.name / session.id),
                      )
    system_prompt, memory = build_system_prompt(root, user_config_dir())
    if memory.truncated:
        warnings.append("Project memory (AGENTS.md, CLAUDE.md, ANVIL.md) is over 32 KiB; the rest was cut.")
    history = repair_history(state.messages) if state else []
    agent = Agent(model, default_tools(), ctx, system_prompt=system_prompt,
                  policy=ApprovalPolicy.from_config(root, user_config_dir(), auto_approve=settings.auto_approve,
                                                    ask_edits=settings.ask_edits), session=session,
                  max_iterations=settings.max_iterations, history=history,
                  compact_threshold=settings.compact_threshold, verify=list(settings.verify),
                  verify_retries=settings.verify_retries, verify_timeout=settings.verify_timeout)
    if state is not None:
        agent.turn = state.turns
        agent.totals.update(prompt_tokens=state.prompt_tokens, completion_tokens=state.completion_tokens,
                            cost=state.total_cost)
        ctx.todos = [TodoItem(**t) for t in state.todos if isinstance(t, dict)]
    return Runtime(settings, root, agent, session, store, warnings, state)
