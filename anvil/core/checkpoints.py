"""File snapshots taken before every change, so that changes can be undone.

Tools call :meth:`CheckpointStore.record` with a file's original bytes (``None`` when the file
did not exist yet) *before* writing it. The store keeps the first original per file per turn,
outside the user's repository. Undo and rewind build on these records.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Protocol


class CheckpointStore(Protocol):
    def record(self, path: Path, original: bytes | None) -> None:
        """Keep ``original`` (None: the file did not exist) before ``path`` is changed."""


class NullCheckpointStore:
    """Keeps nothing: for throwaway contexts (benchmarks, read-only sub-runs)."""

    def record(self, path: Path, original: bytes | None) -> None:
        return None


class FileCheckpointStore:
    """Originals on disk under ``<base>/<turn>/``, with a JSON index per turn.

    Only the first original of a file within a turn is kept: that is the state to go back to.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.turn = 0

    def begin_turn(self, turn: int) -> None:
        self.turn = turn

    def _turn_dir(self, turn: int) -> Path:
        return self.base / f"turn-{turn:05d}"

    def index(self, turn: int) -> list[dict[str, object]]:
        path = self._turn_dir(turn) / "index.json"
        if not path.exists():
            return []
        return list(json.loads(path.read_text(encoding="utf-8")))

    def record(self, path: Path, original: bytes | None) -> None:
        turn_dir = self._turn_dir(self.turn)
        entries = self.index(self.turn)
        if any(e["path"] == str(path) for e in entries):
            return
        turn_dir.mkdir(parents=True, exist_ok=True)
        blob = None
        if original is not None:
            blob = hashlib.sha256(original).hexdigest()
            (turn_dir / blob).write_bytes(original)
        entries.append({"path": str(path), "blob": blob, "time": time.time()})
        (turn_dir / "index.json").write_text(json.dumps(entries, indent=1), encoding="utf-8")

    def original(self, turn: int, path: Path) -> tuple[bool, bytes | None]:
        """(recorded?, bytes or None for 'did not exist') for ``path`` in ``turn``."""
        for entry in self.index(turn):
            if entry["path"] == str(path):
                blob = entry["blob"]
                return True, None if blob is None else (self._turn_dir(turn) / str(blob)).read_bytes()
        return False, None
