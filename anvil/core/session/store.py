"""Append-only JSONL sessions: one record a line, written as it happens.

Layout: ``<data_dir>/sessions/<project-slug>/<id>.jsonl``. Records are small dicts with a ``t`` tag:

- ``session``: id, created, cwd, model, anvil version (always the first line)
- ``message``: one chat message appended to the model's history
- ``event``: an engine event (turns, approvals, usage, todos, context, compaction...)
- ``compaction``: the history that replaced everything before it (earlier records are kept for audit)
- ``rewind``: the history cut back to before turn ``turn`` (/rewind); like ``compaction`` it replaces the
  history on resume, and the prompts of the rewound turns leave the list /rewind offers. Turn numbers
  are not reused: the turn count stays, so checkpoints of later turns never collide with earlier ones.
- ``reset``: a workflow began a new phase with a fresh conversation (``messages``); it replaces the history too
- ``workflow``: the session works on a workflow's job (``workflow``, ``job_id``, ``job_dir``) while ``active``

A crash loses at most the line being written: each record is written as soon as it is appended,
and a torn last line is skipped with a warning when the session is read back. A full disk loses nothing
while anvil runs: records that cannot be written wait in memory and are written when there is room again.
The file is 0600 in a 0700 directory, and known secret values are masked in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.masking import SecretMasker
from anvil.core.private_files import open_private, private_dir
from anvil.core.session.trouble import WriteTrouble


class SessionError(Exception):
    """A session that cannot be found or read; the message says what to do."""


def project_slug(root: Path) -> str:
    """A readable, collision-safe directory name for a project path."""
    text = str(root.resolve())
    readable = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[-48:] or "root"
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


def new_session_id() -> str:
    # Sortable by time, unique without coordination.
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass
class SessionState:
    """What a session's records add up to: the history to resume from, and its bookkeeping."""

    meta: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    todos: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    first_prompt: str = ""
    #: (turn, prompt) of every turn still in the conversation, oldest first (for /rewind)
    prompts: list[tuple[int, str]] = field(default_factory=list)
    total_cost: float | None = None  # None: no call's price was known
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    unpriced_calls: int = 0
    #: the tokens the conversation took in the context at its last measure (the gauge after a resume)
    context_used: int = 0
    warnings: list[str] = field(default_factory=list)
    #: the workflow job the session works on (its ``workflow`` record), or None
    workflow: dict[str, Any] | None = None


class Session:
    """One session file, opened for appending.

    Records are written with plain ``os.write`` calls on a 0600 file. A write that fails (a full disk, a
    directory that became unwritable) never raises: the file is cut back to its last whole record, the records
    stay in memory in order, :attr:`trouble` says so once, and the next append (or :meth:`sync`, or
    :meth:`close`) writes them all when it can. Known secret values are masked in every line written.
    """

    def __init__(self, path: Path, session_id: str, masker: SecretMasker | None = None, *,
                 deferred: bool = False) -> None:
        self.path = path
        self.id = session_id
        self.masker = masker or SecretMasker()
        self.trouble = WriteTrouble(f"the session file {path}")
        self._fd: int | None = None
        self._pending: list[bytes] = []  # whole lines not on disk yet, oldest first
        self._torn = False  # a failed write could not be cut back: the next write starts on a new line
        #: a new session's header waits in memory until its first turn (:meth:`begin`) or any other record: a
        #: start that fails (no key, a mistyped model) or a window closed at once leaves no empty session
        self.deferred = deferred

    def begin(self) -> None:
        """The first turn starts: from now on the session is a file, and every record goes to it at once."""
        if self.deferred:
            self.deferred = False
            self._write_pending()

    @property
    def pending(self) -> int:
        """Records held in memory because they could not be written yet."""
        return len(self._pending)

    def append(self, record: dict[str, Any]) -> None:
        line = self.masker.mask_json(json.dumps(record, ensure_ascii=False, default=str)) + "\n"
        self._pending.append(line.encode("utf-8", "surrogateescape"))
        if record.get("t") != "session":
            self.deferred = False  # anything after the header belongs to a conversation: the file starts here
        if not self.deferred:
            self._write_pending()  # the record reaches the OS now: a crash of anvil cannot lose it

    def _write_pending(self) -> bool:
        """Write the held records; False (and they stay held) when the file cannot take them."""
        if not self._pending:
            return True
        data = (b"\n" if self._torn else b"") + b"".join(self._pending)
        try:
            if self._fd is None:
                private_dir(self.path.parent)
                self._fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
            self._write_all(self._fd, data)
        except OSError as exc:
            self.trouble.failed(exc, f"{len(self._pending)} record(s) held")
            return False
        count, self._torn = len(self._pending), False
        self._pending.clear()
        self.trouble.recovered(count)
        return True

    def _write_all(self, fd: int, data: bytes) -> None:
        start = os.lseek(fd, 0, os.SEEK_END)
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            try:
                os.ftruncate(fd, start)  # no half record left behind: the whole batch is written again later
            except OSError:
                self._torn = True
            raise

    def sync(self) -> None:
        """Push appended records to disk (end of a turn): survives a power loss too."""
        if self.deferred or not self._write_pending() or self._fd is None:
            return
        with contextlib.suppress(OSError):  # the records reached the OS; a failing fsync must not end the turn
            os.fsync(self._fd)

    def close(self) -> None:
        if self.deferred:  # no turn ever started: nothing worth keeping, no file
            self._pending.clear()
            return
        if not self._write_pending():
            self.trouble.lost(f"{len(self._pending)} record(s) of this session could not be written to "
                              f"{self.path} before it closed; resuming it will not show them.")
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def load(self) -> SessionState:
        """The session's state: the file, and the records still held in memory after it. Only reads (it may run
        in a worker thread while the loop appends)."""
        held = list(self._pending)
        missing = held and not self.path.exists()  # not even the first line could be written
        state = SessionState(meta={}) if missing else read_session(self.path)
        for line in held:
            with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
                _apply(state, json.loads(line))
        return state


def read_session(path: Path) -> SessionState:
    """Fold a session file into its state. Unreadable lines are skipped, never fatal."""
    state = SessionState(meta={})
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {exc.strerror}.") from exc
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
            what = "an incomplete last line (anvil stopped while writing it)" if last else f"line {number}"
            state.warnings.append(f"Skipped {what} of {path.name}: it is not valid JSON.")
            continue
        _apply(state, record)
    return state


def _apply(state: SessionState, record: dict[str, Any]) -> None:
    kind = record.get("t")
    if kind == "session":
        state.meta = record
    elif kind == "message":
        message = record.get("message")
        if isinstance(message, dict):
            state.messages.append(message)
    elif kind in ("compaction", "reset"):  # a reset: a workflow's new phase began a fresh conversation
        state.messages = list(record.get("messages", []))
    elif kind == "workflow":
        state.workflow = record if record.get("active") else None
    elif kind == "rewind":
        state.messages = list(record.get("messages", []))
        turn = record.get("turn")
        if isinstance(turn, int):
            state.prompts = [p for p in state.prompts if p[0] < turn]
    elif kind == "event":
        event = record.get("event") or {}
        etype = event.get("type")
        if etype == "turn_started":
            state.turns += 1
            turn = event.get("turn")
            state.prompts.append((turn if isinstance(turn, int) else state.turns, str(event.get("prompt", ""))))
            if not state.first_prompt:
                state.first_prompt = str(event.get("prompt", ""))
        elif etype == "todos_changed":
            state.todos = list(event.get("todos", []))
        elif etype == "usage":
            _apply_usage(state, event)
        elif etype == "context_usage":
            state.context_used = int(event.get("used") or 0)
        elif etype == "compaction_finished" and event.get("ok", True):
            state.context_used = int(event.get("tokens_after") or 0)


def _apply_usage(state: SessionState, event: dict[str, Any]) -> None:
    """The session's totals as of its last usage event."""
    cost = event.get("total_cost")
    state.total_cost = float(cost) if isinstance(cost, (int, float)) else None
    for key in ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        setattr(state, key, int(event.get(f"total_{key}") or 0))
    state.unpriced_calls = int(event.get("unpriced_calls") or 0)


@dataclass
class SessionSummary:
    id: str
    path: Path
    created: float
    updated: float
    first_prompt: str
    turns: int


class SessionStore:
    """The sessions of one project directory."""

    def __init__(self, data_dir: Path, project_root: Path, masker: SecretMasker | None = None) -> None:
        self.data_dir = data_dir
        self.project_root = project_root.resolve()
        self.dir = data_dir / "sessions" / project_slug(self.project_root)
        self.masker = masker or SecretMasker()

    def create(self, model: str, version: str, *, deferred: bool = True) -> Session:
        """A new session; its file is written when its first turn begins (:meth:`Session.begin`), unless
        ``deferred`` is False."""
        session_id = new_session_id()
        session = Session(self.dir / f"{session_id}.jsonl", session_id, self.masker, deferred=deferred)
        session.append({"t": "session", "id": session_id, "created": time.time(),
                        "cwd": str(self.project_root), "model": model, "version": version})
        return session

    def open(self, session_id: str) -> Session:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", session_id):
            raise SessionError(f"'{session_id}' is not a session id. `anvil sessions` lists them.")
        path = self.dir / f"{session_id}.jsonl"
        if not path.exists():
            raise SessionError(f"No session '{session_id}' for {self.project_root}. `anvil sessions` lists them.")
        return Session(path, session_id, self.masker)

    def latest(self) -> Session | None:
        dated = []
        for path in self._paths():
            with contextlib.suppress(OSError):  # removed meanwhile (a prune in another terminal)
                dated.append((path.stat().st_mtime, path))
        if not dated:
            return None
        newest = max(dated)[1]
        return Session(newest, newest.stem, self.masker)

    def _paths(self) -> list[Path]:
        return list(self.dir.glob("*.jsonl")) if self.dir.is_dir() else []

    def list(self) -> list[SessionSummary]:
        summaries = []
        for path in self._paths():
            try:
                state = read_session(path)
                updated = path.stat().st_mtime
            except (SessionError, OSError):
                continue
            created = float(state.meta.get("created") or updated)
            summaries.append(SessionSummary(path.stem, path, created, updated, state.first_prompt, state.turns))
        return sorted(summaries, key=lambda s: s.updated, reverse=True)


def repair_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every assistant tool call a result, so a history cut by a crash is valid to send again."""
    repaired: list[dict[str, Any]] = []
    open_calls: list[dict[str, Any]] = []

    def close_open() -> None:
        for call in open_calls:
            repaired.append({"role": "tool", "tool_call_id": call.get("id"), "name":
                             (call.get("function") or {}).get("name", ""),
                             "content": "No result: anvil stopped before this call finished."})
        open_calls.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            open_calls[:] = [c for c in open_calls if c.get("id") != message.get("tool_call_id")]
        else:
            close_open()
        repaired.append(message)
        if role == "assistant":
            open_calls.extend(message.get("tool_calls") or [])
    close_open()
    return repaired
