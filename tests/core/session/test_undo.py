"""Undo and rewind on real files: byte-exact restores, conflicts with outside changes, no git involved."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anvil.core.session.checkpoints import FileCheckpointStore
from anvil.core.session.store import Session, read_session
from anvil.core.session.undo import UndoManager, rewind_choices, rewind_history, rewind_points
from anvil.core.tools.base import ToolContext


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def store(tmp_path: Path) -> FileCheckpointStore:
    return FileCheckpointStore(tmp_path / "data" / "checkpoints" / "s1")


@pytest.fixture
def undo(store: FileCheckpointStore, root: Path) -> UndoManager:
    return UndoManager(store, root)


def change(store: FileCheckpointStore, path: Path, data: bytes | None) -> None:
    """What a tool does: checkpoint the original, then write (or delete, for None)."""
    store.record(path, path.read_bytes() if path.exists() else None)
    if data is None:
        path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def turn(store: FileCheckpointStore, number: int, *changes: tuple[Path, bytes | None]) -> None:
    store.begin_turn(number)
    for path, data in changes:
        change(store, path, data)
    store.finish_turn(number)


def test_undo_restores_modified_created_and_deleted_files_byte_for_byte(store, undo, root):
    crlf, binary, doomed = root / "crlf.txt", root / "blob.bin", root / "old.txt"
    crlf.write_bytes(b"one\r\ntwo\r\nno final newline")
    binary.write_bytes(bytes(range(256)) * 4)
    doomed.write_bytes(b"keep me\n")
    os.chmod(crlf, 0o754)
    os.chmod(doomed, 0o640)
    turn(store, 1, (crlf, b"rewritten\n"), (binary, b"\x00changed"), (doomed, None),
         (root / "pkg" / "deep" / "new.py", b"x = 1\n"))

    report = undo.undo_last()

    assert report.ok and report.turns == (1,)
    assert crlf.read_bytes() == b"one\r\ntwo\r\nno final newline"
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o754
    assert binary.read_bytes() == bytes(range(256)) * 4
    assert doomed.read_bytes() == b"keep me\n" and stat.S_IMODE(doomed.stat().st_mode) == 0o640
    assert not (root / "pkg").exists(), "directories the turn created are removed again when empty"
    actions = {f.display: f.action for f in report.files}
    assert actions == {"crlf.txt": "reverted", "blob.bin": "reverted", "old.txt": "restored",
                       "pkg/deep/new.py": "removed"}
    text = report.summary()
    assert "Undid turn 1" in text and "removed pkg/deep/new.py" in text and "restored old.txt" in text
    assert sorted(p.name for p in root.iterdir()) == ["blob.bin", "crlf.txt", "old.txt"]


def test_turns_lists_changes_and_a_second_undo_goes_one_further_back(store, undo, root):
    app = root / "app.py"
    app.write_bytes(b"v0\n")
    turn(store, 1, (app, b"v1\n"))
    store.begin_turn(2)  # a turn that only talked: nothing recorded, so nothing listed
    store.finish_turn(2)
    turn(store, 3, (app, b"v3\n"), (root / "notes.md", b"n\n"))

    listed = undo.turns()
    assert [t.turn for t in listed] == [1, 3]
    assert [(f.display, f.kind) for f in listed[1].files] == [("app.py", "modified"), ("notes.md", "created")]
    assert "turn 3" in listed[1].summary() and "notes.md (created)" in listed[1].summary()

    assert undo.undo_last().turns == (3,)
    assert app.read_bytes() == b"v1\n" and not (root / "notes.md").exists()
    assert [t.turn for t in undo.turns()] == [1], "an undone turn leaves the list; undo adds no turn of its own"
    assert undo.undo_last().turns == (1,)
    assert app.read_bytes() == b"v0\n"
    assert undo.turns() == []
    nothing = undo.undo_last()
    assert nothing.turns == () and not nothing.applied and "Nothing to undo" in nothing.summary()


def test_new_turn_after_an_undo_is_undone_first(store, undo, root):
    app = root / "app.py"
    app.write_bytes(b"v0\n")
    turn(store, 1, (app, b"v1\n"))
    turn(store, 2, (app, b"v2\n"))
    undo.undo_last()
    turn(store, 3, (app, b"v3\n"))
    assert undo.undo_last().turns == (3,) and app.read_bytes() == b"v1\n"
    assert undo.undo_last().turns == (1,) and app.read_bytes() == b"v0\n"


def test_rewind_restores_the_code_to_before_a_turn(store, undo, root):
    a, b = root / "a.txt", root / "b.txt"
    a.write_bytes(b"a0")
    turn(store, 1, (a, b"a1"))
    turn(store, 2, (a, b"a2"), (b, b"b2"))
    turn(store, 3, (a, b"a3"), (b, None))

    report = undo.rewind(2)

    assert report.ok and report.turns == (3, 2)
    assert a.read_bytes() == b"a1" and not b.exists()
    assert "turns 2–3" in report.summary()
    assert [t.turn for t in undo.turns()] == [1]


def test_outside_change_is_a_conflict_and_nothing_is_overwritten(store, undo, root):
    a, b = root / "a.txt", root / "b.txt"
    a.write_bytes(b"a0")
    b.write_bytes(b"b0")
    turn(store, 1, (a, b"a1"), (b, b"b1"))
    b.write_bytes(b"the person's edit")

    report = undo.undo_last()

    assert not report.applied and [c.display for c in report.conflicts] == ["b.txt"]
    assert "changed outside anvil since turn 1" in report.conflicts[0].reason
    assert a.read_bytes() == b"a1" and b.read_bytes() == b"the person's edit", "nothing at all was changed"
    text = report.summary()
    assert "Nothing was undone" in text and "b.txt" in text and "force" in text
    assert [t.turn for t in undo.turns()] == [1], "the turn stays undoable"

    forced = undo.undo_last(force=True)
    assert forced.ok and forced.forced and a.read_bytes() == b"a0" and b.read_bytes() == b"b0"
    assert "overwriting outside changes" in forced.summary()


def test_outside_deletion_and_changes_between_turns_are_conflicts(store, undo, root):
    a, b, new = root / "a.txt", root / "b.txt", root / "new.txt"
    a.write_bytes(b"a0")
    b.write_bytes(b"b0")
    turn(store, 1, (a, b"a1"), (b, b"b1"), (new, b"n1"))
    a.write_bytes(b"edited between turns")  # the person, before turn 2 started
    turn(store, 2, (a, b"a2"))
    b.unlink()
    new.unlink()  # already where the rewind takes it (absent): nothing to lose, so no conflict

    report = undo.rewind(1)

    reasons = {c.display: c.reason for c in report.conflicts}
    assert reasons == {"a.txt": "changed outside anvil between turns 1 and 2",
                       "b.txt": "deleted outside anvil since turn 1"}
    assert a.read_bytes() == b"a2" and not b.exists() and not new.exists()
    # Undoing turn 2 alone loses nothing of the person's: its original is their edit.
    assert undo.undo_last().ok and a.read_bytes() == b"edited between turns"


def test_a_file_already_back_at_its_original_is_not_a_conflict(store, undo, root):
    a = root / "a.txt"
    a.write_bytes(b"a0")
    turn(store, 1, (a, b"a1"))
    a.write_bytes(b"a0")  # the person reverted it by hand
    report = undo.undo_last()
    assert report.ok and report.files[0].action == "unchanged" and a.read_bytes() == b"a0"


def test_a_file_that_cannot_be_restored_is_reported_and_its_turn_stays_undoable(store, undo, root):
    a, b = root / "a.txt", root / "b.txt"
    a.write_bytes(b"a0")
    b.write_bytes(b"b0")
    turn(store, 1, (a, b"a1"), (b, b"b1"))
    b.unlink()
    b.mkdir()  # something that is not a file now stands where the file was
    (b / "inside").write_bytes(b"x")

    report = undo.undo_last(force=True)

    assert report.applied and not report.ok and report.errors[0].startswith("b.txt: ")
    assert a.read_bytes() == b"a0" and (b / "inside").exists()
    assert "could not be restored" in report.summary()
    assert [t.turn for t in undo.turns()] == [1]
    (b / "inside").unlink()
    b.rmdir()
    assert undo.undo_last(force=True).ok and b.read_bytes() == b"b0", "fix the problem, undo again: done"


def test_unfinished_turn_is_finished_lazily(store, undo, root):
    a = root / "a.txt"
    a.write_bytes(b"a0")
    store.begin_turn(1)
    change(store, a, b"a1")  # anvil stopped before finish_turn
    fresh = UndoManager(FileCheckpointStore(store.base), root)  # a new process, after a resume
    assert fresh.undo_last().ok and a.read_bytes() == b"a0"


def test_checkpoints_live_outside_the_project(store, root):
    turn(store, 1, (root / "a.txt", b"x"))
    assert not store.base.is_relative_to(root)
    assert [p.name for p in root.iterdir()] == ["a.txt"]


async def test_undo_after_real_file_tools(tmp_path, root):
    from anvil.core.tools.edit.edit_tools import EditFileTool
    from anvil.core.tools.files.file_tools import ReadFileTool, WriteFileTool

    store = FileCheckpointStore(tmp_path / "cp")
    ctx = ToolContext(root=root, data_dir=tmp_path / "data", checkpoints=store)
    app = root / "app.py"
    app.write_bytes(b"def f():\r\n    return 1\r\n")
    store.begin_turn(1)
    await ReadFileTool().run(ReadFileTool.Args(path="app.py"), ctx)
    await EditFileTool().run(EditFileTool.Args(path="app.py", old_string="return 1", new_string="return 2"), ctx)
    await WriteFileTool().run(WriteFileTool.Args(path="src/new.py", content="x = 1\n"), ctx)
    store.finish_turn(1)
    assert b"return 2" in app.read_bytes()

    report = UndoManager(store, root).undo_last()
    assert report.ok, report.summary()
    assert app.read_bytes() == b"def f():\r\n    return 1\r\n"
    assert not (root / "src").exists()


def test_works_in_a_git_repository_without_touching_git_state(store, undo, root):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "T")
    (root / "tracked.txt").write_bytes(b"committed\n")
    (root / "staged.txt").write_bytes(b"staged\n")
    git("add", "tracked.txt")
    git("commit", "-qm", "init")
    git("add", "staged.txt")
    status, head, staged = git("status", "--porcelain"), git("rev-parse", "HEAD"), git("ls-files", "-s")

    turn(store, 1, (root / "tracked.txt", b"changed by anvil\n"), (root / "brand_new.txt", b"new\n"))
    assert git("status", "--porcelain") != status

    def no_processes(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"undo started a process: {args}")

    with pytest.MonkeyPatch.context() as patch:  # undo must not run git (or anything else)
        patch.setattr(subprocess, "Popen", no_processes)
        patch.setattr(os, "posix_spawn", no_processes, raising=False)
        assert undo.undo_last().ok

    assert git("status", "--porcelain") == status
    assert git("rev-parse", "HEAD") == head
    assert git("ls-files", "-s") == staged, "the index (staged content) is untouched"
    assert git("stash", "list") == ""


# -- the conversation ---------------------------------------------------------------------------------


def call(call_id: str) -> dict[str, object]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}


def result(call_id: str) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": "ok"}


HISTORY = [
    {"role": "user", "content": "fix the bug"}, call("c1"), result("c1"), {"role": "assistant", "content": "fixed"},
    {"role": "user", "content": "go on"}, call("c2"), result("c2"),
    {"role": "user", "content": "[anvil] Verification failed"}, {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "go on"}, call("c3"), result("c3"), {"role": "assistant", "content": "done"},
]
PROMPTS = [(1, "fix the bug"), (2, "go on"), (3, "go on")]


def test_rewind_points_find_each_turn_even_with_repeated_prompts():
    points = rewind_points(HISTORY, PROMPTS)
    assert [(p.turn, p.index) for p in points] == [(1, 0), (2, 4), (3, 9)]


def test_rewind_history_cuts_before_the_turn_and_keeps_the_history_valid():
    assert rewind_history(HISTORY, 9) == HISTORY[:9]
    assert rewind_history(HISTORY, 0) == []
    # A cut inside a tool call's exchange goes back to before the call: no dangling tool call.
    assert rewind_history(HISTORY, 6) == HISTORY[:5]
    kept = rewind_history(HISTORY, 4)
    assert kept == HISTORY[:4] and kept is not HISTORY


def test_rewind_points_stop_at_a_compaction():
    compacted = [{"role": "user", "content": "[anvil context snapshot] ..."}, *HISTORY[9:]]
    assert [(p.turn, p.index) for p in rewind_points(compacted, PROMPTS)] == [(3, 1)]


def test_rewind_choices_join_the_conversation_and_the_code(store, undo, root):
    turn(store, 2, (root / "a.txt", b"x"))
    choices = rewind_choices(HISTORY, PROMPTS, undo)
    assert [c.turn for c in choices] == [3, 2, 1]
    assert [len(c.files) for c in choices] == [0, 1, 0]
    assert "turn 2: 'go on' · 1 file(s) changed" in choices[1].summary()


def test_a_rewind_record_replaces_the_history_on_resume(tmp_path):
    session = Session(tmp_path / "s.jsonl", "s")
    session.append({"t": "session", "id": "s"})
    for number, (turn_no, prompt) in enumerate(PROMPTS):
        session.append({"t": "event", "event": {"type": "turn_started", "turn": turn_no, "prompt": prompt,
                                                "session_id": "s"}})
        for message in HISTORY[[0, 4, 9][number]:[4, 9, 13][number]]:
            session.append({"t": "message", "message": message})
    state = read_session(session.path)
    assert state.messages == HISTORY and state.prompts == PROMPTS

    rewound = rewind_history(HISTORY, 4)
    session.append({"t": "rewind", "turn": 2, "messages": rewound})
    session.append({"t": "event", "event": {"type": "turn_started", "turn": 4, "prompt": "again",
                                            "session_id": "s"}})
    session.append({"t": "message", "message": {"role": "user", "content": "again"}})
    session.close()

    state = read_session(session.path)
    assert state.messages == [*rewound, {"role": "user", "content": "again"}]
    assert state.prompts == [(1, "fix the bug"), (4, "again")]
    assert state.turns == 4, "turn numbers are not reused after a rewind"


@given(st.lists(st.sampled_from(["user", "text", "calls1", "calls2"]), max_size=12), st.data())
def test_rewind_history_is_always_a_valid_prefix(shape, data):
    history: list[dict[str, object]] = []
    for n, kind in enumerate(shape):
        if kind == "user":
            history.append({"role": "user", "content": f"u{n}"})
        elif kind == "text":
            history.append({"role": "assistant", "content": f"a{n}"})
        else:
            ids = [f"c{n}-{k}" for k in range(int(kind[-1]))]
            history.append({"role": "assistant", "content": None,
                            "tool_calls": [{"id": i, "function": {"name": "x", "arguments": "{}"}} for i in ids]})
            history += [{"role": "tool", "tool_call_id": i, "content": "r"} for i in ids]
    index = data.draw(st.integers(0, len(history)))
    cut = rewind_history(history, index)
    assert cut == history[:len(cut)] and len(cut) <= index
    answered = {m["tool_call_id"] for m in cut if m["role"] == "tool"}
    asked = {c["id"] for m in cut for c in m.get("tool_calls") or []}  # type: ignore[attr-defined]
    assert asked == answered
    assert index - len(cut) <= 2, "it only steps back over one unfinished tool exchange"


async def test_a_sub_agent_leaves_later_changes_in_the_turn_they_belong_to(tmp_path, root, monkeypatch):
    """A sub-agent ran its own turn 1 on the shared store: the parent's next writes went to turn 1 instead of 2."""
    from anvil.config import Settings
    from anvil.core.model.scripted import ScriptedModel
    from anvil.runtime import open_runtime

    task = {"name": "task", "arguments": {"description": "look", "prompt": "write it", "agent_type": "general"}}
    turns = [{"text": "first"},
             {"tool_calls": [task]},
             {"tool_calls": [{"name": "write_file", "arguments": {"path": "by_sub.txt", "content": "s\n"}}]},
             {"text": "sub done"},
             {"tool_calls": [{"name": "write_file", "arguments": {"path": "after.txt", "content": "x\n"}}]},
             {"text": "done"}]
    runtime = open_runtime(Settings(model="scripted", auto_approve=True), root, model=ScriptedModel(turns),
                           interactive=False)
    for prompt in ("one", "two"):
        async for _ in runtime.agent.run_turn(prompt):
            pass
    assert runtime.undo is not None
    assert [(t.turn, sorted(f.display for f in t.files)) for t in runtime.undo.turns()] == [
        (2, ["after.txt", "by_sub.txt"])]
    assert runtime.undo.undo_last().ok and not (root / "after.txt").exists() and not (root / "by_sub.txt").exists()
