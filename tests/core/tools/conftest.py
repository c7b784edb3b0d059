"""Fixtures for the file and edit tool tests: a context whose checkpoint store records every call."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.core.session.checkpoints import NullCheckpointStore
from anvil.core.tools.base import ToolContext


class RecordingStore(NullCheckpointStore):
    """A checkpoint store that remembers each call and what the file held on disk at that moment."""

    def __init__(self) -> None:
        self.calls: list[tuple[Path, bytes | None, bytes | None]] = []

    def record(self, path: Path, original: bytes | None) -> None:
        self.calls.append((path, original, path.read_bytes() if path.exists() else None))


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


@pytest.fixture
def ctx(project: Path, tmp_path: Path, store: RecordingStore) -> ToolContext:
    return ToolContext(root=project, data_dir=tmp_path / "data", checkpoints=store)
