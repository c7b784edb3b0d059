"""Sessions: append-only records, resume, crash recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil.core.session.store import SessionError, SessionStore, project_slug, read_session, repair_history


def test_records_fold_into_state(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "data", tmp_path / "proj")
    session = store.create("openai/x", "0.1")
    session.append({"t": "event", "event": {"type": "turn_started", "turn": 1, "prompt": "fix the bug"}})
    session.append({"t": "message", "message": {"role": "user", "content": "fix the bug"}})
    session.append({"t": "event", "event": {"type": "todos_changed",
                                            "todos": [{"content": "a", "status": "pending", "active_form": None}]}})
    session.append({"t": "event", "event": {"type": "usage", "total_cost": 0.5, "total_prompt_tokens": 10,
                                            "total_completion_tokens": 2}})
    state = session.load()
    assert state.meta["model"] == "openai/x"
    assert state.messages == [{"role": "user", "content": "fix the bug"}]
    assert state.turns == 1 and state.first_prompt == "fix the bug"
    assert state.todos[0]["content"] == "a" and state.total_cost == 0.5


def test_resuming_restores_cache_tokens_and_an_unknown_cost(tmp_path: Path, project: Path) -> None:
    from anvil.config import Settings
    from anvil.core.model.scripted import ScriptedModel
    from anvil.facade import SessionFacade
    from anvil.runtime import open_runtime

    runtime = open_runtime(Settings(model="scripted"), project, model=ScriptedModel([]))
    runtime.session.append({"t": "event", "event": {
        "type": "usage", "total_cost": None, "total_prompt_tokens": 900, "total_completion_tokens": 40,
        "total_cache_read_tokens": 800, "total_cache_write_tokens": 60, "total_reasoning_tokens": 7,
        "unpriced_calls": 2}})
    runtime.session.close()
    resumed = SessionFacade(open_runtime(Settings(model="scripted"), project, continue_latest=True,
                                         model=ScriptedModel([])))
    usage = resumed.usage()
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (
        900, 800, 60, 7)
    assert usage.cost is None and usage.unpriced_calls == 2  # still unknown after a resume, not $0
    resumed.runtime.session.close()


def test_each_record_is_on_disk_as_soon_as_it_is_appended(tmp_path: Path) -> None:
    session = SessionStore(tmp_path, tmp_path / "p").create("m", "v")
    session.append({"t": "message", "message": {"role": "user", "content": "one"}})
    # Read with a separate handle while the session is still open: nothing is held back in a buffer.
    lines = session.path.read_text().splitlines()
    assert json.loads(lines[-1])["message"]["content"] == "one"


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    session = SessionStore(tmp_path, tmp_path / "p").create("m", "v")
    session.append({"t": "message", "message": {"role": "user", "content": "kept"}})
    session.close()
    with session.path.open("a") as f:
        f.write('{"t": "message", "message": {"role": "assis')  # a crash mid-write
    state = read_session(session.path)
    assert state.messages == [{"role": "user", "content": "kept"}]
    assert len(state.warnings) == 1 and "incomplete last line" in state.warnings[0]


def test_compaction_record_replaces_history(tmp_path: Path) -> None:
    session = SessionStore(tmp_path, tmp_path / "p").create("m", "v")
    session.append({"t": "message", "message": {"role": "user", "content": "old"}})
    session.append({"t": "compaction", "messages": [{"role": "user", "content": "summary"}]})
    session.append({"t": "message", "message": {"role": "user", "content": "new"}})
    assert [m["content"] for m in session.load().messages] == ["summary", "new"]


def test_latest_list_and_open(tmp_path: Path) -> None:
    import os
    import time

    store = SessionStore(tmp_path, tmp_path / "p")
    first = store.create("m", "v", deferred=False)
    second = store.create("m", "v")
    second.append({"t": "event", "event": {"type": "turn_started", "prompt": "hello there"}})
    os.utime(first.path, (time.time() - 100, time.time() - 100))
    latest = store.latest()
    assert latest is not None and latest.id == second.id
    listed = store.list()
    assert [s.id for s in listed] == [second.id, first.id]
    assert listed[0].first_prompt == "hello there" and listed[0].turns == 1
    assert store.open(first.id).path == first.path
    with pytest.raises(SessionError, match="anvil sessions"):
        store.open("nope")
    with pytest.raises(SessionError):
        store.open("../../etc/passwd")


def test_projects_do_not_share_sessions(tmp_path: Path) -> None:
    assert project_slug(tmp_path / "a") != project_slug(tmp_path / "b")
    SessionStore(tmp_path, tmp_path / "a").create("m", "v")
    assert SessionStore(tmp_path, tmp_path / "b").latest() is None


def test_repair_history_answers_dangling_tool_calls() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "name": "read_file", "content": "ok"},
    ]
    repaired = repair_history(history)
    assert repaired[:3] == history
    assert repaired[3]["tool_call_id"] == "b" and "stopped" in repaired[3]["content"]
    assert repair_history(repaired) == repaired


def test_a_session_becomes_a_file_only_when_its_first_turn_starts(tmp_path: Path) -> None:
    """A start that fails (no key, a mistyped model) leaves nothing for `anvil sessions` to list."""
    store = SessionStore(tmp_path, tmp_path / "p")
    failed = store.create("m", "v")
    failed.close()
    assert not failed.path.exists() and store.list() == [] and store.latest() is None
    used = store.create("m", "v")
    assert not used.path.exists()
    used.begin()
    assert used.path.exists() and [s.id for s in store.list()] == [used.id]
    used.append({"t": "event", "event": {"type": "turn_started", "prompt": "hello"}})
    used.close()
    assert store.list()[0].first_prompt == "hello"
