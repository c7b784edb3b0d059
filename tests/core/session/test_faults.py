"""The session file and the checkpoints under faults: a name too long to exist, a full disk, modes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from anvil.core.session.checkpoints import FileCheckpointStore, restore_file
from anvil.core.session.store import SessionStore, read_session
from anvil.core.session.undo import UndoManager
from tests.support.full_disk import FullDisk

LONG_NAME = "a" * 300 + ".txt"  # over NAME_MAX (255) on every common filesystem


@pytest.fixture(autouse=True)
def umask_022() -> object:
    old = os.umask(0o022)  # the common default, under which anvil used to write 0644 files
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- a name the filesystem cannot hold --------------------------------------------------------------------


def test_a_recorded_name_too_long_to_exist_finishes_the_turn_and_every_later_one(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    store = FileCheckpointStore(tmp_path / "cp")
    store.begin_turn(1)
    store.record(root / LONG_NAME, None)  # what write_file records before its write fails with ENAMETOOLONG
    store.finish_turn()  # raised OSError (File name too long) before
    assert store.meta(1)["after"] == {str(root / LONG_NAME): None}
    # A resume (a new process) finishes unfinished turns at the start of the next one: that crashed too.
    fresh = FileCheckpointStore(tmp_path / "cp")
    fresh.begin_turn(2)
    report = UndoManager(fresh, root).undo_last()
    assert report.ok and report.files[0].action == "unchanged"


def test_a_checkpoint_left_unfinished_by_the_old_crash_resumes(tmp_path: Path) -> None:
    """A session whose turn crashed in finish_turn has an index and no turn.json: resuming it must work."""
    root = tmp_path / "project"
    root.mkdir()
    turn_dir = tmp_path / "cp" / "turn-00001"
    turn_dir.mkdir(parents=True)
    (turn_dir / "index.json").write_text(json.dumps([{"path": str(root / LONG_NAME), "blob": None, "mode": None,
                                                      "time": 1.0, "created_dirs": []}]))
    store = FileCheckpointStore(tmp_path / "cp")
    store.begin_turn(2)
    assert store.meta(1)["finished"]
    assert [t.turn for t in UndoManager(store, root).turns()] == [1]


# -- a full disk under the data directory ---------------------------------------------------------------


def test_the_session_file_holds_records_in_memory_while_the_disk_is_full(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    session = SessionStore(tmp_path / "data", tmp_path / "p").create("m", "v")
    session.append({"t": "message", "message": {"role": "user", "content": "before"}})
    disk.full = True
    for n in range(3):
        session.append({"t": "message", "message": {"role": "user", "content": f"while full {n}"}})  # raised
    session.sync()
    assert session.pending == 3 and disk.refused >= 4
    told = session.trouble.take()
    assert len(told) == 1 and "No space left on device" in told[0] and "in memory" in told[0]
    # The state seen meanwhile (rewind reads it) has everything; the file has no torn line.
    assert [m["content"] for m in session.load().messages] == ["before", "while full 0", "while full 1",
                                                               "while full 2"]
    assert read_session(session.path).warnings == []
    disk.full = False
    session.append({"t": "message", "message": {"role": "user", "content": "after"}})
    assert session.pending == 0
    told = session.trouble.take()
    assert len(told) == 1 and "works again" in told[0]
    session.close()
    state = read_session(session.path)
    assert [m["content"] for m in state.messages] == ["before", "while full 0", "while full 1", "while full 2",
                                                      "after"]
    assert state.warnings == []


def test_a_session_that_could_not_even_start_its_file_is_written_when_space_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    disk.full = True
    session = SessionStore(tmp_path / "data", tmp_path / "p").create("m", "v")  # mkdir fails: raised before
    session.append({"t": "message", "message": {"role": "user", "content": "one"}})
    assert not session.path.exists() and session.load().meta["model"] == "m"
    disk.full = False
    session.close()
    state = read_session(session.path)
    assert state.meta["id"] == session.id and [m["content"] for m in state.messages] == ["one"]


def test_closing_while_the_disk_is_still_full_says_what_was_not_written(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    session = SessionStore(tmp_path / "data", tmp_path / "p").create("m", "v", deferred=False)
    disk.full = True
    session.append({"t": "message", "message": {"role": "user", "content": "lost"}})
    session.close()
    told = session.trouble.take()
    assert len(told) == 2 and "1 record(s) of this session could not be written" in told[1]


def test_checkpoints_on_a_full_disk_keep_undo_working_from_memory(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    edited, created = root / "app.py", root / "new.py"
    edited.write_bytes(b"original\n")
    disk = FullDisk(tmp_path / "data", monkeypatch)
    store = FileCheckpointStore(tmp_path / "data" / "checkpoints" / "s1")
    disk.full = True
    store.begin_turn(1)
    store.record(edited, b"original\n")  # raised ENOSPC before
    edited.write_bytes(b"changed\n")
    store.record(created, None)
    created.write_bytes(b"new\n")
    store.finish_turn()
    told = store.take_notices()
    assert len(told) == 1 and "checkpoints" in told[0] and "No space left on device" in told[0]
    assert not store.base.exists()
    report = UndoManager(store, root).undo_last()  # from memory
    assert report.ok and edited.read_bytes() == b"original\n" and not created.exists()
    # Space returns: the next write puts everything held on disk, and a new process sees it.
    disk.full = False
    store.begin_turn(2)
    store.record(edited, b"original\n")
    told = store.take_notices()
    assert len(told) == 1 and told[0].startswith(f"Writing the checkpoints under {store.base} works again (")
    fresh = FileCheckpointStore(store.base)
    assert fresh.original(1, edited) == (True, b"original\n") and fresh.meta(1)["undone"]


# -- modes: nothing anvil writes is readable by other users -----------------------------------------------


def test_session_files_and_checkpoints_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    root = tmp_path / "project"
    root.mkdir()
    secret = root / ".env"
    secret.write_text("API_TOKEN=hunter2hunter2\n")
    secret.chmod(0o600)
    session = SessionStore(data, root).create("m", "v")
    session.append({"t": "message", "message": {"role": "user", "content": "hi"}})
    store = FileCheckpointStore(data / "checkpoints" / "proj" / session.id)
    store.begin_turn(1)
    store.record(secret, secret.read_bytes())
    store.finish_turn()
    assert mode(session.path) == 0o600 and mode(session.path.parent) == 0o700
    assert mode(data / "sessions") == 0o700
    blob = next(p for p in (store.base / "turn-00001").iterdir() if len(p.name) == 64)
    assert blob.read_bytes() == b"API_TOKEN=hunter2hunter2\n" and mode(blob) == 0o600  # was 0644
    for path in [store.base, store.base / "turn-00001", *(store.base / "turn-00001").iterdir()]:
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path


def test_undo_puts_back_the_original_mode(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    secret = root / ".env"
    secret.write_text("A=1\n")
    secret.chmod(0o600)
    store = FileCheckpointStore(tmp_path / "cp")
    store.begin_turn(1)
    store.record(secret, secret.read_bytes())
    assert store.index(1)[0]["mode"] == 0o600
    secret.write_text("A=2\n")
    secret.chmod(0o644)  # the change widened it (a tool that wrote a new file in its place)
    store.finish_turn()
    assert UndoManager(store, root).undo_last().ok
    assert secret.read_text() == "A=1\n" and mode(secret) == 0o600


def test_restoring_never_leaves_a_readable_copy_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary file undo writes is 0600 from its first byte, not widened and narrowed afterwards."""
    target = tmp_path / ".env"
    modes: list[int] = []
    real_chmod = os.chmod

    def spy(path: object, new_mode: int, *args: object, **kwargs: object) -> None:
        modes.append(stat.S_IMODE(os.stat(path).st_mode))  # type: ignore[arg-type]
        real_chmod(path, new_mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "chmod", spy)
    restore_file(target, b"SECRET_KEY=abcdefgh\n", 0o600)
    assert modes and all(m & 0o077 == 0 for m in modes)
    assert mode(target) == 0o600


def test_checkpoints_held_by_a_full_disk_are_written_at_the_next_turn_or_said_lost_at_close(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    disk = FullDisk(tmp_path / "data", monkeypatch)
    store = FileCheckpointStore(tmp_path / "data" / "cp")
    disk.full = True
    store.begin_turn(1)
    store.record(root / "a.txt", None)
    store.finish_turn()
    disk.full = False
    store.begin_turn(2)  # a turn that changes nothing still writes what was held
    assert FileCheckpointStore(store.base).index(1)[0]["path"] == str(root / "a.txt")
    disk.full = True
    store.record(root / "b.txt", None)
    store.close()
    told = store.take_notices()
    assert told[-1].startswith("The checkpoints of turn(s) 2 could not be written")
