"""File snapshots taken before every change, so that changes can be undone.

Tools call :meth:`CheckpointStore.record` with a file's original bytes (``None`` when the file
did not exist yet) *before* writing it. The store keeps the first original per file per turn,
outside the user's repository. Undo and rewind (:mod:`anvil.core.session.undo`) build on these records.

To tell anvil's changes from the person's, the store also keeps, per turn, the sha256 of every
touched file as anvil left it (``finish_turn``, called when a turn ends). A file whose hash on disk
differs from that was changed outside anvil since, and undo refuses to overwrite it without
``force``. If a turn was never finished (anvil crashed, or the caller forgot), it is finished lazily
when the next turn begins or an undo is planned: what is on disk then is most likely what anvil left.

Layout under ``base``: ``turn-00005/index.json`` (one entry per file: path, blob, mode (the original's
permission bits, put back on undo), time, created_dirs), ``turn-00005/<sha256>`` (original bytes) and
``turn-00005/turn.json`` (finished, after-hashes, undone). Files are 0600 in 0700 directories: an original
can hold a secret.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any, Protocol

from anvil.core.private_files import private_dir, replace_private, write_private
from anvil.core.session.trouble import WriteTrouble

_TURN_PREFIX = "turn-"


class CheckpointStore(Protocol):
    def record(self, path: Path, original: bytes | None) -> None:
        """Keep ``original`` (None: the file did not exist) before ``path`` is changed."""

    def begin_turn(self, turn: int) -> None:
        """Records from now on belong to ``turn``."""

    def finish_turn(self, turn: int | None = None) -> None:
        """Remember how anvil left the files ``turn`` touched (default: the current turn)."""

    def take_notices(self) -> list[str]:
        """What the person should hear about the store (it could not write, it writes again), once each."""

    def for_subagent(self) -> CheckpointStore:
        """The view a sub-agent records through (see :class:`SubagentCheckpoints`)."""


class NullCheckpointStore:
    """Keeps nothing: for throwaway contexts (benchmarks, read-only sub-runs)."""

    def record(self, path: Path, original: bytes | None) -> None:
        return None

    def begin_turn(self, turn: int) -> None:
        return None

    def finish_turn(self, turn: int | None = None) -> None:
        return None

    def take_notices(self) -> list[str]:
        return []

    def for_subagent(self) -> CheckpointStore:
        return self


class SubagentCheckpoints:
    """A sub-agent's view of its parent's checkpoints. What it changes belongs to the parent's turn (the one that
    ran the task), so it records there, and starting and finishing turns stay the parent's: a sub-agent's own turn
    numbers (1, 2...) would otherwise move the parent's later changes into the wrong turn."""

    def __init__(self, parent: CheckpointStore) -> None:
        self.parent = parent

    def record(self, path: Path, original: bytes | None) -> None:
        self.parent.record(path, original)

    def begin_turn(self, turn: int) -> None:
        return None

    def finish_turn(self, turn: int | None = None) -> None:
        return None

    def take_notices(self) -> list[str]:
        return []  # the parent's loop tells them, in its own events

    def for_subagent(self) -> CheckpointStore:
        return self


#: the after-hash of a file anvil could not read back (permissions): never equal to a real hash
UNREADABLE = "unreadable"


def file_hash(path: Path) -> str | None:
    """sha256 of a file's bytes; None when there is no regular file there (or there cannot be: a name too long
    for the filesystem); :data:`UNREADABLE` when there is one anvil cannot read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        return None if exc.errno == errno.ENAMETOOLONG else UNREADABLE


def _mode_of(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None  # restored with the default mode if it is ever needed


class FileCheckpointStore:
    """Originals on disk under ``<base>/turn-NNNNN/``, with a JSON index per turn.

    Only the first original of a file within a turn is kept: that is the state to go back to. What cannot be
    written (a full disk) is held in memory, used from there by undo, and written on the next write that
    succeeds; :attr:`trouble` tells the person once. Everything is written 0600 in 0700 directories.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.turn = 0
        self.trouble = WriteTrouble(f"the checkpoints under {base}")
        self._finished: set[int] = set()  # spares begin_turn re-reading every turn's bookkeeping
        # Held until written: the newest state of a turn's index and bookkeeping, and originals.
        self._held_index: dict[int, list[dict[str, Any]]] = {}
        self._held_meta: dict[int, dict[str, Any]] = {}
        self._held_blobs: dict[tuple[int, str], bytes] = {}

    # -- writing (the tools and the loop) --------------------------------------------------------------

    def begin_turn(self, turn: int) -> None:
        self._write_held()  # what a full disk held back, now that there may be room
        self.finish_pending()
        self.turn = turn

    def record(self, path: Path, original: bytes | None) -> None:
        entries = self.index(self.turn)
        if any(e["path"] == str(path) for e in entries):
            return
        blob = mode = None
        if original is not None:
            blob = hashlib.sha256(original).hexdigest()
            self._held_blobs[(self.turn, blob)] = original
            mode = _mode_of(path)
        entries.append({"path": str(path), "blob": blob, "mode": mode, "time": time.time(),
                        "created_dirs": [str(d) for d in _missing_parents(path)] if original is None else []})
        self._held_index[self.turn] = entries
        meta = self.meta(self.turn)
        if meta.get("finished"):  # a late record after finish_turn: the after-hashes must be taken again
            meta["finished"] = None
            self._held_meta[self.turn] = meta
        self._finished.discard(self.turn)
        self._write_held()

    def finish_turn(self, turn: int | None = None) -> None:
        turn = self.turn if turn is None else turn
        entries = self.index(turn)
        if not entries:
            self._write_held()
            return
        meta = self.meta(turn)
        meta.update(turn=turn, finished=time.time(),
                    after={str(e["path"]): file_hash(Path(str(e["path"]))) for e in entries})
        self._held_meta[turn] = meta
        self._finished.add(turn)
        self._write_held()

    def finish_pending(self) -> None:
        """Finish turns that were never finished (a crash, a missing finish_turn call)."""
        for turn in self.recorded_turns():
            if turn in self._finished:
                continue
            if self.meta(turn).get("finished"):
                self._finished.add(turn)
            else:
                self.finish_turn(turn)

    def mark_undone(self, turn: int, undone: bool = True) -> None:
        meta = self.meta(turn)
        meta["undone"] = time.time() if undone else None
        self._held_meta[turn] = meta
        self._write_held()

    def take_notices(self) -> list[str]:
        return self.trouble.take()

    def close(self) -> None:
        """The session ends: a last try at writing what a full disk held back, and a word on what is lost."""
        self._write_held()
        if self._held_index or self._held_meta or self._held_blobs:
            turns = sorted({*self._held_index, *self._held_meta, *(turn for turn, _ in self._held_blobs)})
            self.trouble.lost(f"The checkpoints of turn(s) {', '.join(map(str, turns))} could not be written to "
                              f"{self.base}; after this session those changes cannot be undone.")

    def for_subagent(self) -> CheckpointStore:
        return SubagentCheckpoints(self)

    def _write_held(self) -> None:
        """Write what is held, originals before the index that names them; stop at the first failure."""
        if not (self._held_index or self._held_meta or self._held_blobs):
            return
        written = 0
        try:
            for key in sorted(self._held_blobs):
                turn, blob = key
                path = private_dir(self._turn_dir(turn)) / blob
                if not path.exists():
                    write_private(path, self._held_blobs[key])
                del self._held_blobs[key]
                written += 1
            for held, name in ((self._held_index, "index.json"), (self._held_meta, "turn.json")):
                for turn in sorted(held):
                    replace_private(private_dir(self._turn_dir(turn)) / name, json.dumps(held[turn], indent=1).encode())
                    del held[turn]
                    written += 1
        except OSError as exc:
            self.trouble.failed(exc, "undo keeps working from memory")
            return
        self.trouble.recovered(written)

    # -- reading (undo) ------------------------------------------------------------------------------

    def _turn_dir(self, turn: int) -> Path:
        return self.base / f"{_TURN_PREFIX}{turn:05d}"

    def index(self, turn: int) -> list[dict[str, Any]]:
        if turn in self._held_index:
            return [dict(e) for e in self._held_index[turn]]
        return list(_read_json(self._turn_dir(turn) / "index.json", []))

    def meta(self, turn: int) -> dict[str, Any]:
        """The turn's bookkeeping: ``finished`` (time), ``after`` ({path: sha256 or None}), ``undone``."""
        if turn in self._held_meta:
            return dict(self._held_meta[turn])
        return dict(_read_json(self._turn_dir(turn) / "turn.json",
                               {"turn": turn, "finished": None, "after": {}, "undone": None}))

    def recorded_turns(self) -> list[int]:
        """Turns with at least one recorded file, oldest first."""
        turns = set(self._held_index)
        if self.base.is_dir():
            for child in self.base.iterdir():
                number = child.name.removeprefix(_TURN_PREFIX)
                if child.name.startswith(_TURN_PREFIX) and number.isdigit() and (child / "index.json").exists():
                    turns.add(int(number))
        return sorted(turns)

    def read_blob(self, turn: int, blob: str) -> bytes:
        """The original bytes kept as ``blob`` in ``turn`` (from memory while they could not be written)."""
        held = self._held_blobs.get((turn, blob))
        return held if held is not None else (self._turn_dir(turn) / blob).read_bytes()

    def original(self, turn: int, path: Path) -> tuple[bool, bytes | None]:
        """(recorded?, bytes or None for 'did not exist') for ``path`` in ``turn``."""
        for entry in self.index(turn):
            if entry["path"] == str(path):
                blob = entry["blob"]
                return True, None if blob is None else self.read_blob(turn, str(blob))
        return False, None


def _read_json(path: Path, default: Any) -> Any:
    """A bookkeeping file, or ``default`` when it is missing or unreadable (undo then knows less, never crashes)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def _missing_parents(path: Path) -> list[Path]:
    """Directories a write to ``path`` will create, deepest first (undo removes them again if empty)."""
    missing = []
    parent = path.parent
    try:
        while parent != parent.parent and not parent.exists():
            missing.append(parent)
            parent = parent.parent
    except OSError:  # a name the filesystem cannot hold: nothing will be created there
        return []
    return missing


def restore_file(path: Path, data: bytes, mode: int | None) -> None:
    """Put ``data`` back at ``path`` atomically, with ``mode`` (else the mode the file has now)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = None
    tmp = path.with_name(f".{path.name}.anvil-undo-{os.getpid()}")
    try:
        write_private(tmp, data)  # 0600 until the original's mode is set: a secret is never readable by others
        if mode is not None:
            os.chmod(tmp, mode)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
