"""Undo and rewind without git: the code from the checkpoint store, the conversation from the history.

Code. :class:`UndoManager` reads the per-turn originals that :mod:`anvil.core.session.checkpoints` keeps and
puts them back: created files are removed (with the directories their write created, when empty),
deleted ones restored, modified ones restored byte for byte with their permissions. It never runs
git or touches ``.git``, so it works the same in any directory, and a git repository's index,
branches and stash are left exactly as they were.

Outside changes. Before overwriting anything, every file is compared with the hash anvil left it
at. A file changed since (in an editor, by a formatter the person ran, by git checkout) is a
conflict: without ``force`` nothing at all is changed and the report lists the conflicts, so the
front end can ask; with ``force`` anvil's originals win. A file already back at its original is
not a conflict: undo is idempotent, so a run that failed halfway can simply be repeated.

Undone turns are marked in the store, so a second ``/undo`` goes one turn further back, and undoing
is not itself a turn that shows up in the list. Changes made by shell commands (``sed -i``, ``rm``)
are not checkpointed, so they cannot be undone here; the reports say so.

Conversation. :func:`rewind_points` finds where each turn starts in the history (by its prompt,
counting from the newest, so it survives compaction for the turns still in the history) and
:func:`rewind_history` cuts the history there, keeping it valid to send.
"""

from __future__ import annotations

import hashlib
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from anvil.core.session.checkpoints import FileCheckpointStore, file_hash, restore_file

ChangeKind = Literal["created", "modified", "deleted", "temporary"]
UndoAction = Literal["removed", "restored", "reverted", "unchanged"]
UNTRACKED_NOTE = "Changes made by shell commands (run_command) are not tracked and were not undone."


@dataclass(frozen=True)
class FileChange:
    """One file a turn changed: ``created`` (did not exist before), ``modified``, ``deleted``, or
    ``temporary`` (created and removed again within the turn)."""

    path: Path
    display: str
    kind: ChangeKind


@dataclass(frozen=True)
class TurnChanges:
    turn: int
    files: tuple[FileChange, ...]
    time: float  # when the turn first changed a file

    def summary(self) -> str:
        shown = ", ".join(f"{f.display} ({f.kind})" for f in self.files[:5])
        more = f", and {len(self.files) - 5} more" if len(self.files) > 5 else ""
        stamp = time.strftime("%H:%M", time.localtime(self.time))
        return f"turn {self.turn} ({stamp}): {shown}{more}"


@dataclass(frozen=True)
class Conflict:
    path: Path
    display: str
    reason: str


@dataclass(frozen=True)
class Restored:
    path: Path
    display: str
    action: UndoAction


@dataclass(frozen=True)
class UndoReport:
    """What an undo or rewind did, or would do. ``applied`` is False when conflicts stopped it."""

    turns: tuple[int, ...] = ()
    files: tuple[Restored, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    errors: tuple[str, ...] = ()
    applied: bool = False
    forced: bool = False

    @property
    def ok(self) -> bool:
        return self.applied and not self.errors

    def summary(self) -> str:
        if not self.turns:
            return ("Nothing to undo: no turn left in this session changed files through anvil's file tools. "
                    + UNTRACKED_NOTE)
        which = _turn_words(self.turns)
        if self.conflicts and not self.applied:
            lines = [f"Nothing was undone: {len(self.conflicts)} file(s) changed outside anvil since {which}:"]
            lines += [f"  {c.display}: {c.reason}" for c in self.conflicts]
            lines.append("Undoing would overwrite those changes. Save them elsewhere first if you want to keep "
                         "them, then undo again with force to let anvil's originals win.")
            return "\n".join(lines)
        changed = [f for f in self.files if f.action != "unchanged"]
        head = f"Undid {which}" + (" (overwriting outside changes)" if self.forced and self.conflicts else "")
        lines = [head + (":" if changed else ": the files were already as they were before.")]
        lines += [f"  {f.action} {f.display}" for f in changed]
        if self.errors:
            lines.append("Some files could not be restored (the turn stays undoable; fix this and undo again):")
            lines += [f"  {e}" for e in self.errors]
        lines.append(UNTRACKED_NOTE)
        return "\n".join(lines)


def _turn_words(turns: Sequence[int]) -> str:
    ordered = sorted(turns)
    if len(ordered) == 1:
        return f"turn {ordered[0]}"
    return f"turns {ordered[0]}–{ordered[-1]} ({len(ordered)} turns that changed files)"


@dataclass
class _Step:
    """One turn's record of one file."""

    turn: int
    original: str | None  # sha256 of the bytes before the turn, None: did not exist
    after: str | None  # sha256 anvil left, None: did not exist at the end of the turn
    entry: dict[str, Any]


@dataclass
class _FilePlan:
    path: Path
    steps: list[_Step] = field(default_factory=list)  # newest turn first


class UndoManager:
    """Undo the newest turn's file changes, or rewind the code to before a turn."""

    def __init__(self, store: FileCheckpointStore, root: Path) -> None:
        self.store = store
        self.root = root.resolve()

    def _display(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _live_turns(self) -> list[int]:
        return [t for t in self.store.recorded_turns() if not self.store.meta(t).get("undone")]

    def turns(self) -> list[TurnChanges]:
        """The turns whose file changes can still be undone, oldest first."""
        self.store.finish_pending()
        result = []
        for turn in self._live_turns():
            entries = self.store.index(turn)
            after = self.store.meta(turn).get("after", {})
            files = tuple(FileChange(Path(e["path"]), self._display(Path(e["path"])),
                                     _kind(e["blob"], after.get(e["path"]))) for e in entries)
            result.append(TurnChanges(turn, files, min(float(e.get("time") or 0) for e in entries)))
        return result

    def undo_last(self, *, force: bool = False) -> UndoReport:
        """Restore the files changed in the newest turn that changed files and is not undone yet."""
        self.store.finish_pending()
        live = self._live_turns()
        return self._undo(live[-1:], force)

    def rewind(self, turn: int, *, force: bool = False) -> UndoReport:
        """Restore the code to how it was before ``turn``: undo it and every later turn, newest first."""
        self.store.finish_pending()
        return self._undo([t for t in self._live_turns() if t >= turn], force)

    def _undo(self, turns: list[int], force: bool) -> UndoReport:
        if not turns:
            return UndoReport()
        turns = sorted(turns, reverse=True)
        plans = self._plan(turns)
        conflicts = [c for plan in plans if (c := self._conflict(plan)) is not None]
        if conflicts and not force:
            return UndoReport(tuple(turns), conflicts=tuple(conflicts))
        done: list[Restored] = []
        errors: list[str] = []
        for plan in plans:
            try:
                done.append(self._restore(plan))
            except OSError as exc:
                errors.append(f"{self._display(plan.path)}: {exc.strerror or exc}")
        if not errors:  # a failed file keeps its turns live, so the person can fix it and undo again
            for turn in turns:
                self.store.mark_undone(turn)
        return UndoReport(tuple(turns), tuple(done), tuple(conflicts), tuple(errors), applied=True, forced=force)

    def _plan(self, newest_first: list[int]) -> list[_FilePlan]:
        plans: dict[str, _FilePlan] = {}
        for turn in newest_first:
            after = self.store.meta(turn).get("after", {})
            for entry in self.store.index(turn):
                key = str(entry["path"])
                plan = plans.setdefault(key, _FilePlan(Path(key)))
                plan.steps.append(_Step(turn, entry["blob"], after.get(key), entry))
        return sorted(plans.values(), key=lambda p: str(p.path))

    def _conflict(self, plan: _FilePlan) -> Conflict | None:
        """Why restoring this file would lose someone else's change, or None."""
        current = file_hash(plan.path)
        newest, oldest = plan.steps[0], plan.steps[-1]
        if current == oldest.original:
            return None  # already back where the undo takes it: nothing to lose
        display = self._display(plan.path)
        if current != newest.after:
            what = "deleted" if current is None else "created" if newest.after is None else "changed"
            return Conflict(plan.path, display, f"{what} outside anvil since turn {newest.turn}")
        for newer, older in zip(plan.steps, plan.steps[1:], strict=False):
            if newer.original != older.after:
                return Conflict(plan.path, display,
                                f"changed outside anvil between turns {older.turn} and {newer.turn}")
        return None

    def _restore(self, plan: _FilePlan) -> Restored:
        oldest = plan.steps[-1]
        path, display = plan.path, self._display(plan.path)
        blob = oldest.original
        if blob is None:
            if not _exists(path):
                return Restored(path, display, "unchanged")
            path.unlink()
            for directory in oldest.entry.get("created_dirs") or []:
                try:
                    Path(directory).rmdir()  # only ever removes an empty directory
                except OSError:
                    break
            return Restored(path, display, "removed")
        existed = path.exists()
        data = self.store.read_blob(oldest.turn, blob)
        if hashlib.sha256(data).hexdigest() != blob:
            raise OSError(f"the saved original of turn {oldest.turn} is damaged; restore it by hand")
        if existed and file_hash(path) == blob:
            return Restored(path, display, "unchanged")
        restore_file(path, data, oldest.entry.get("mode"))
        return Restored(path, display, "reverted" if existed else "restored")


def _exists(path: Path) -> bool:
    """A file or a link is there (a name too long for the filesystem never is)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISLNK(info.st_mode) or stat.S_ISREG(info.st_mode)


def _kind(original: str | None, after: str | None) -> ChangeKind:
    if original is None:
        return "temporary" if after is None else "created"
    return "deleted" if after is None else "modified"


# -- the conversation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewindPoint:
    """Where a turn starts in the history (without the system prompt): the index of its prompt."""

    turn: int
    prompt: str
    index: int


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def rewind_points(history: Sequence[dict[str, Any]], prompts: Sequence[tuple[int, str]]) -> list[RewindPoint]:
    """The turns still in ``history``, oldest first, matched to the session's ``(turn, prompt)`` list.

    Matching goes from the newest turn backwards, each prompt searched before the previous match, so
    a repeated prompt ("go on") finds its own turn, and messages that are not turn starts (steering,
    verification results, a compaction snapshot) are skipped. It stops at the first turn no longer in
    the history (compacted away): the conversation cannot be rewound past a compaction.
    """
    points: list[RewindPoint] = []
    position = len(history)
    for turn, prompt in sorted(prompts, reverse=True):
        found = next((i for i in range(position - 1, -1, -1)
                      if history[i].get("role") == "user" and _text(history[i]) == prompt), None)
        if found is None:
            break
        points.append(RewindPoint(turn, prompt, found))
        position = found
    return points[::-1]


def rewind_history(history: Sequence[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """``history`` cut to before message ``index``, and further back if needed so that every assistant
    tool call keeps its result (a history with a dangling call is refused by providers)."""
    safe = 0
    open_calls: set[str] = set()
    for i, message in enumerate(history[:index]):
        role = message.get("role")
        if role == "tool":
            open_calls.discard(str(message.get("tool_call_id")))
        elif role == "assistant":
            open_calls = {str(c.get("id")) for c in message.get("tool_calls") or []}
        if not open_calls:
            safe = i + 1
    return [dict(m) for m in history[:safe]]


@dataclass(frozen=True)
class RewindChoice:
    """One line of the /rewind list: a turn, whether its conversation is still there, what files it changed."""

    turn: int
    prompt: str
    point: RewindPoint | None
    files: tuple[FileChange, ...]

    def summary(self) -> str:
        prompt = " ".join(self.prompt.split())
        prompt = prompt if len(prompt) <= 60 else prompt[:59] + "…"
        files = f"{len(self.files)} file(s) changed" if self.files else "no file changes"
        note = "" if self.point else " · conversation compacted"
        return f"turn {self.turn}: {prompt!r} · {files}{note}"


def rewind_choices(history: Sequence[dict[str, Any]], prompts: Sequence[tuple[int, str]],
                   undo: UndoManager | None) -> list[RewindChoice]:
    """Every turn the person can rewind to, newest first: the code, the conversation, or both."""
    points = {p.turn: p for p in rewind_points(history, prompts)}
    changes = {t.turn: t.files for t in (undo.turns() if undo else [])}
    return [RewindChoice(turn, prompt, points.get(turn), changes.get(turn, ()))
            for turn, prompt in sorted(prompts, reverse=True)]
