"""The Agent Client Protocol's methods, answered by anvil: initialize, authenticate, session/new, session/load,
session/list, session/set_mode, session/prompt and session/cancel.

A session is an anvil session: its ACP id is anvil's, so session/load resumes what ``anvil --resume ID`` would.
Settings come from the session's directory (its ``.anvil/config.toml``, trusted or not as elsewhere) and the
flags ``anvil acp`` was started with; the editor's MCP servers join anvil's own (anvil's win on a clash).
"""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
)

from anvil import __version__
from anvil.acp.editor import EditorFiles, EditorTerminal
from anvil.acp.replay import replay
from anvil.acp.turn import AcpSession
from anvil.config import ConfigError, Settings, data_dir, load_settings
from anvil.core.mcp.config import McpServerConfig
from anvil.core.model.errors import ModelError
from anvil.core.session.store import SessionError, SessionStore
from anvil.facade import SessionFacade
from anvil.runtime import build_model, open_runtime

MODES = [
    SessionMode(id="ask", name="Ask", description="Edits apply; commands ask unless a rule allows them."),
    SessionMode(id="accept_edits", name="Accept edits", description="Edits apply without asking, even with "
                "ask_edits; commands ask unless a rule allows them."),
    SessionMode(id="auto", name="Auto", description="Everything runs without asking, except the hard-deny list."),
    SessionMode(id="plan", name="Plan", description="Read and plan only; nothing changes until you approve the plan."),
]
#: seconds session/new and session/load wait for MCP servers to list their tools
MCP_WAIT = 30.0
NO_TERMINAL = ("[acp] terminal = true, but this editor offers no terminal to anvil: anvil runs the commands itself "
               "(still in its sandbox).")


class AnvilAgent:
    """One ``anvil acp`` process: any number of sessions for the editor connected to it."""

    def __init__(self, flags: dict[str, Any], *, trust: bool | None = None, cwd: Path | None = None) -> None:
        self.flags, self.trust = flags, trust
        self.cwd = cwd or Path.cwd()
        self.client: Any = None
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        problem = await self._key_problem(self.cwd)
        methods = [] if problem is None else [AuthMethodAgent(id="provider-key", name="Set the model's API key",
                                                              description=problem)]
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities())),
            auth_methods=methods,
            agent_info=Implementation(name="anvil", title="anvil", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """anvil signs in with the provider key in its environment: this only checks that it is there."""
        problem = await self._key_problem(self.cwd)
        if problem is not None:
            raise RequestError(-32000, problem)
        return AuthenticateResponse()

    async def _key_problem(self, root: Path) -> str | None:
        """What stops the model from answering at all (no key, an unknown model); None when it can answer."""
        try:
            settings = load_settings(root, self.flags, trust=self.trust)
            model = await asyncio.to_thread(build_model, settings)
            return await asyncio.to_thread(model.preflight)
        except (ConfigError, ModelError):
            return None  # not a sign-in matter: session/new reports it

    # -- sessions ------------------------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        session = await self._open(cwd, mcp_servers or [], resume=None)
        return NewSessionResponse(session_id=session.id, modes=_modes(session.facade))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        if (open_before := self.sessions.pop(session_id, None)) is not None:
            await open_before.facade.close()
        session = await self._open(cwd, mcp_servers or [], resume=session_id)
        facade = session.facade
        for update in replay(facade.resumed_messages or [], facade.describe_call, facade.root):
            await session.send(update)
        return LoadSessionResponse(modes=_modes(facade))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        root = Path(cwd or self.cwd).resolve()
        found = await asyncio.to_thread(SessionStore(data_dir(), root).list)
        return ListSessionsResponse(sessions=[
            SessionInfo(session_id=s.id, cwd=str(root), title=" ".join(s.first_prompt.split())[:80] or None,
                        updated_at=datetime.datetime.fromtimestamp(s.updated, datetime.UTC).isoformat())
            for s in found])

    async def _open(self, cwd: str, servers: list[Any], resume: str | None) -> AcpSession:
        root = Path(cwd)
        if not root.is_absolute() or not root.is_dir():
            raise RequestError(-32602, f"anvil: {cwd} is not a directory (the session's cwd must be an absolute "
                                       "path to one).")
        try:
            settings, notices = _with_editor_servers(load_settings(root, self.flags, trust=self.trust), servers)
            runtime = await asyncio.to_thread(open_runtime, settings, root, resume=resume)
        except (ConfigError, ModelError) as exc:
            raise RequestError(-32602, f"anvil: {exc}") from None
        except SessionError as exc:
            raise RequestError(-32002, f"anvil: {exc}") from None
        facade = SessionFacade(runtime)
        session = AcpSession(facade, self.client)
        session.notices += [*notices, *facade.warnings]
        self._offer_editor(session, settings)
        # The servers' tools are there for the first prompt (the editor shows the session as loading meanwhile).
        session.notices += await facade.start(wait_for_mcp=MCP_WAIT)
        if problem := await facade.preflight():
            await facade.close()
            raise RequestError(-32000, problem)
        self.sessions[session.id] = session
        return session

    def _offer_editor(self, session: AcpSession, settings: Settings) -> None:
        """The editor's buffers for read_file when it can read them; its terminal when the person chose that."""
        caps = self.capabilities
        read = EditorFiles(self.client, session.id).read if caps.fs is not None and caps.fs.read_text_file else None
        terminal = None
        if settings.acp.terminal:
            if caps.terminal:
                terminal = EditorTerminal(self.client, session.id, session.show_terminal)
            else:
                session.notices.append(NO_TERMINAL)
        session.facade.use_editor(read_text=read, terminal=terminal)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(-32002, f"anvil: no open session {session_id}; create one (session/new) or load it "
                                       "(session/load).")
        return session

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        try:
            await self._session(session_id).set_mode(mode_id)
        except ValueError:
            raise RequestError(-32602, f"anvil: unknown mode {mode_id!r}; the modes are "
                                       f"{', '.join(m.id for m in MODES)}.") from None
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        stop = await self._session(session_id).prompt(prompt)
        return PromptResponse(stop_reason=stop)  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (session := self.sessions.get(session_id)) is not None:
            session.cancel()

    async def close(self) -> None:
        """The editor hung up: end every session as anvil ends one (hooks, MCP servers, background commands)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await session.facade.close()


def _modes(facade: SessionFacade) -> SessionModeState:
    return SessionModeState(current_mode_id=facade.mode, available_modes=MODES)


def _with_editor_servers(settings: Settings, servers: list[Any]) -> tuple[Settings, list[str]]:
    """anvil's MCP servers and the editor's, and what could not be added. anvil's own win on a name clash."""
    merged = dict(settings.mcp_servers)
    notices = []
    for server in servers:
        name = server.name
        if name in merged:
            notices.append(f"The editor's MCP server '{name}' has the name of one in anvil's configuration; "
                           "anvil's is used.")
        elif isinstance(server, McpServerStdio):
            merged[name] = McpServerConfig(command=server.command, args=list(server.args),
                                           env={v.name: v.value for v in server.env})
        elif isinstance(server, HttpMcpServer):
            merged[name] = McpServerConfig(url=server.url, headers={h.name: h.value for h in server.headers})
        else:
            notices.append(f"The editor's MCP server '{name}' uses a transport anvil does not speak here "
                           f"({getattr(server, 'type', 'unknown')}); it was left out.")
    return settings.model_copy(update={"mcp_servers": merged}), notices
