"""File snapshots taken before every change, so that changes can be undone.

Tools call :meth:`CheckpointStore.record` with a file's original bytes (``None`` when the file
did not exist yet) *before* writing it. The store keeps the first original per file per turn,
outside the user's repository. Undo and rewind (:mod:`anvil.core.session.undo`) build on these records.

To tell anvil's changes from the person's, the store also keeps, per turn, the sha256 of every
touched file as anvil left it (``finish_turn``, called when a turn ends). A file whose hash on disk
differs from that was changed outside anvil since, and undo refuses to overwrite it without
``force``. If a turn was never finished (anvil crashed, or the caller forgot), it is finished lazily
when the next turn begins or an undo is planned: what is on disk then is most likely what anvil left.

Layout under ``base``: ``turn-00005/index.json`` (one entry per file: path, blob, mode, time,
created_dirs), ``turn-00005/<sha256>`` (original bytes) and ``turn-00005/turn.json`` (finished,
after-hashes, undone).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any, Protocol

_TURN_PREFIX = "turn-"


class CheckpointStore(Protocol):
    def record(self, path: Path, original: bytes | None) -> None:
        """Keep ``original`` (None: the file did not exist) before ``path`` is changed."""

    def begin_turn(self, turn: int) -> None:
        """Records from now on belong to ``turn``."""

    def finish_turn(self, turn: int | None = None) -> None:
        """Remember how anvil left the files ``turn`` touched (default: the current turn)."""


class NullCheckpointStore:
    """Keeps nothing: for throwaway contexts (benchmarks, read-only sub-runs)."""

    def record(self, path: Path, original: bytes | None) -> None:
        return None

    def begin_turn(self, turn: int) -> None:
        return None

    def finish_turn(self, turn: int | None = None) -> None:
        return None


def file_hash(path: Path) -> str | None:
    """sha256 of a file's bytes, or None when there is no regular file there."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _write_json(path: Path, data: Any) -> None:
    # Write then rename: a crash leaves the old index, never half of a new one.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)


class FileCheckpointStore:
    """Originals on disk under ``<base>/turn-NNNNN/``, with a JSON index per turn.

    Only the first original of a file within a turn is kept: that is the state to go back to.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.turn = 0
        self._finished: set[int] = set()  # spares begin_turn re-reading every turn's bookkeeping

    # -- writing (the tools and the loop) --------------------------------------------------------------

    def begin_turn(self, turn: int) -> None:
        self.finish_pending()
        self.turn = turn

    def record(self, path: Path, original: bytes | None) -> None:
        turn_dir = self._turn_dir(self.turn)
        entries = self.index(self.turn)
        if any(e["path"] == str(path) for e in entries):
            return
        turn_dir.mkdir(parents=True, exist_ok=True)
        blob = mode = None
        if original is not None:
            blob = hashlib.sha256(original).hexdigest()
            (turn_dir / blob).write_bytes(original)
            try:
                mode = stat.S_IMODE(path.stat().st_mode)
            except OSError:
                mode = None  # restored with the default mode if it is ever needed
        entries.append({"path": str(path), "blob": blob, "mode": mode, "time": time.time(),
                        "created_dirs": [str(d) for d in _missing_parents(path)] if original is None else []})
        _write_json(turn_dir / "index.json", entries)
        meta = self.meta(self.turn)
        if meta.get("finished"):  # a late record after finish_turn: the after-hashes must be taken again
            meta["finished"] = None
            _write_json(turn_dir / "turn.json", meta)
        self._finished.discard(self.turn)

    def finish_turn(self, turn: int | None = None) -> None:
        turn = self.turn if turn is None else turn
        entries = self.index(turn)
        if not entries:
            return
        meta = self.meta(turn)
        meta.update(turn=turn, finished=time.time(),
                    after={str(e["path"]): file_hash(Path(str(e["path"]))) for e in entries})
        _write_json(self._turn_dir(turn) / "turn.json", meta)
        self._finished.add(turn)

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
        _write_json(self._turn_dir(turn) / "turn.json", meta)

    # -- reading (undo) ------------------------------------------------------------------------------

    def _turn_dir(self, turn: int) -> Path:
        return self.base / f"{_TURN_PREFIX}{turn:05d}"

    def index(self, turn: int) -> list[dict[str, Any]]:
        path = self._turn_dir(turn) / "index.json"
        if not path.exists():
            return []
        return list(json.loads(path.read_text(encoding="utf-8")))

    def meta(self, turn: int) -> dict[str, Any]:
        """The turn's bookkeeping: ``finished`` (time), ``after`` ({path: sha256 or None}), ``undone``."""
        path = self._turn_dir(turn) / "turn.json"
        if not path.exists():
            return {"turn": turn, "finished": None, "after": {}, "undone": None}
        return dict(json.loads(path.read_text(encoding="utf-8")))

    def recorded_turns(self) -> list[int]:
        """Turns with at least one recorded file, oldest first."""
        if not self.base.is_dir():
            return []
        turns = []
        for child in self.base.iterdir():
            number = child.name.removeprefix(_TURN_PREFIX)
            if child.name.startswith(_TURN_PREFIX) and number.isdigit() and (child / "index.json").exists():
                turns.append(int(number))
        return sorted(turns)

    def blob_path(self, turn: int, blob: str) -> Path:
        return self._turn_dir(turn) / blob

    def original(self, turn: int, path: Path) -> tuple[bool, bytes | None]:
        """(recorded?, bytes or None for 'did not exist') for ``path`` in ``turn``."""
        for entry in self.index(turn):
            if entry["path"] == str(path):
                blob = entry["blob"]
                return True, None if blob is None else (self._turn_dir(turn) / str(blob)).read_bytes()
        return False, None


def _missing_parents(path: Path) -> list[Path]:
    """Directories a write to ``path`` will create, deepest first (undo removes them again if empty)."""
    missing = []
    parent = path.parent
    while parent != parent.parent and not parent.exists():
        missing.append(parent)
        parent = parent.parent
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
        tmp.write_bytes(data)
        if mode is not None:
            os.chmod(tmp, mode)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
