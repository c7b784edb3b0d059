"""Resuming a long session: the newest batch of entries at once, older ones as the person scrolls up.

The app runs with a real runtime resumed from a session file written in anvil's format, as ``--resume`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events

from anvil.config import Settings, data_dir
from anvil.core.model.scripted import ScriptedModel
from anvil.core.session.store import SessionStore
from anvil.runtime import open_runtime
from anvil.tui.app import AnvilApp
from anvil.tui.transcript import HISTORY_BATCH, MAX_ENTRIES, AssistantEntry, Entry, ToolEntry, Transcript, UserEntry
from tests.tui.conftest import wait_for

SIZE = (100, 30)
ENTRIES_PER_TURN = 4  # the question, "Let me look." with a tool call, the tool call, the answer


def turn_messages(turn: int) -> list[dict[str, Any]]:
    call = {"id": f"call_{turn}", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}
    return [
        {"role": "user", "content": f"question {turn}"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "name": "read_file", "content": f"line one\nline {turn}"},
        {"role": "assistant", "content": f"answer {turn}: the file says *line {turn}*."},
    ]


def resumed_app(project: Path, turns: int) -> AnvilApp:
    """An app resuming a session of ``turns`` turns, each shown as four entries."""
    store = SessionStore(data_dir(), project.resolve())
    session = store.create("scripted", "test")
    for turn in range(1, turns + 1):
        for message in turn_messages(turn):
            session.append({"t": "message", "message": message})
    session.close()
    runtime = open_runtime(Settings(model="scripted"), project, resume=session.id,
                           model=ScriptedModel([{"text": "a new answer"}]))
    return AnvilApp(project, runtime=runtime)


def entry_text(index: int) -> str:
    """What the session's entry number ``index`` (0-based, oldest first) shows."""
    turn, part = divmod(index, ENTRIES_PER_TURN)
    turn += 1
    return [f"question {turn}", "Let me look.", f"read_file notes.txt\nline one\nline {turn}",
            f"answer {turn}: the file says *line {turn}*."][part]


def history(transcript: Transcript) -> list[Entry]:
    """The mounted entries that came from the session (not the app's own notices)."""
    return [e for e in transcript.entries() if isinstance(e, UserEntry | AssistantEntry | ToolEntry)]


def marker_text(transcript: Transcript) -> str:
    return str(transcript.query_one("#earlier").render())


def starts_in_view(transcript: Transcript) -> Entry:
    """The first entry whose top line is on screen."""
    top = transcript.content_region.y
    return next(e for e in transcript.entries() if e.region.height and e.region.y >= top)


async def wheel_up(pilot: Any) -> None:
    """One step of the mouse wheel over the transcript."""
    transcript = pilot.app.transcript
    transcript.post_message(events.MouseScrollUp(transcript, 5, 5, 0, -1, 0, False, False, False))
    await pilot.pause()


async def wheel_up_until(pilot: Any, condition: Callable[[], object], steps: int = 200) -> None:
    for _ in range(steps):
        if condition():
            return
        await wheel_up(pilot)
    raise AssertionError("the wheel never got there")


async def started(pilot: Any) -> AnvilApp:
    app = pilot.app
    await wait_for(pilot, lambda: app.started and app.transcript.entries())
    await pilot.pause()
    return app


async def settle(pilot: Any, frames: int = 5) -> None:
    """Replies render after mounting (Markdown, then frozen): give the layout a few frames."""
    for _ in range(frames):
        await pilot.pause(0.02)


async def test_resume_mounts_only_the_newest_batch_and_counts_the_rest(project: Path) -> None:
    turns = 100
    app = resumed_app(project, turns)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        transcript = app.transcript
        shown = history(transcript)
        earlier = turns * ENTRIES_PER_TURN - HISTORY_BATCH
        assert [e.plain_text for e in shown] == [entry_text(i) for i in range(earlier, turns * ENTRIES_PER_TURN)]
        assert transcript.unshown == earlier
        assert f"↑ {earlier} earlier entries" in marker_text(transcript)
        assert "scroll up to load more" in marker_text(transcript)
        assert len(transcript.entries()) <= HISTORY_BATCH + 2  # the history and anvil's own notices
        assert transcript.is_vertical_scroll_end  # the newest is what the person sees first


async def test_scrolling_to_the_top_loads_older_entries_without_moving_the_view(project: Path) -> None:
    app = resumed_app(project, 100)
    async with app.run_test(size=SIZE) as pilot:
        transcript = (await started(pilot)).transcript
        oldest = history(transcript)[0]
        line = transcript.content_region.y + oldest.virtual_region.y  # its screen line once scrolled to the top
        await wheel_up_until(pilot, lambda: transcript.unshown < 400 - HISTORY_BATCH)
        await settle(pilot)
        assert transcript.unshown == 400 - 2 * HISTORY_BATCH
        assert len(history(transcript)) == 2 * HISTORY_BATCH
        assert history(transcript)[HISTORY_BATCH] is oldest  # the new batch went above
        assert history(transcript)[0].plain_text == entry_text(400 - 2 * HISTORY_BATCH)
        assert f"↑ {400 - 2 * HISTORY_BATCH} earlier entries" in marker_text(transcript)
        # What the person was looking at (the then-oldest entry, under the marker) did not move: the batch
        # is above, out of view, and the scroll offset grew by its height.
        assert transcript.scroll_y > 0
        assert abs(oldest.region.y - line) <= 1, (line, oldest.region.y)


async def test_the_entry_in_view_keeps_its_screen_line_while_a_batch_loads(project: Path) -> None:
    app = resumed_app(project, 100)
    async with app.run_test(size=SIZE) as pilot:
        transcript = (await started(pilot)).transcript
        transcript.scroll_to(y=20, animate=False)  # reading, a screen or so above the bottom
        await settle(pilot)
        looked_at = starts_in_view(transcript)
        line = looked_at.region.y
        assert await transcript.load_older() == HISTORY_BATCH
        await settle(pilot, 10)
        assert transcript.unshown == 400 - 2 * HISTORY_BATCH
        assert abs(looked_at.region.y - line) <= 1, (line, looked_at.region.y)
        assert starts_in_view(transcript) is looked_at


async def test_enter_on_the_marker_loads_a_batch(project: Path) -> None:
    app = resumed_app(project, 100)
    async with app.run_test(size=SIZE) as pilot:
        transcript = (await started(pilot)).transcript
        transcript.query_one("#earlier").focus(scroll_visible=False)
        await pilot.press("enter")
        await wait_for(pilot, lambda: transcript.unshown == 400 - 2 * HISTORY_BATCH)
        await settle(pilot)
        assert len(history(transcript)) == 2 * HISTORY_BATCH


async def test_a_short_session_shows_everything_without_a_marker(project: Path) -> None:
    turns = 5
    app = resumed_app(project, turns)
    async with app.run_test(size=SIZE) as pilot:
        transcript = (await started(pilot)).transcript
        shown = history(transcript)
        assert len(shown) == turns * ENTRIES_PER_TURN < HISTORY_BATCH
        assert [e.plain_text for e in shown] == [entry_text(i) for i in range(turns * ENTRIES_PER_TURN)]
        assert transcript.unshown == 0 and not transcript.query("#earlier")
        transcript.scroll_to(y=0, animate=False)
        await wheel_up(pilot)
        await settle(pilot)
        assert len(history(transcript)) == turns * ENTRIES_PER_TURN and not transcript.query("#earlier")


async def test_loaded_entries_stay_while_reading_and_return_to_the_backlog_when_pruned(project: Path) -> None:
    app = resumed_app(project, 100)
    async with app.run_test(size=SIZE) as pilot:
        transcript = (await started(pilot)).transcript
        for _ in range(3):
            await transcript.load_older()
        await settle(pilot)
        assert len(history(transcript)) == 4 * HISTORY_BATCH > MAX_ENTRIES
        transcript.scroll_to(y=5, animate=False)  # reading near the top, among what was loaded
        await settle(pilot)
        reading = starts_in_view(transcript)
        transcript.add_line("notice", "new while reading")  # arrives at the bottom: nothing is pruned under the reader
        await settle(pilot)
        assert len(history(transcript)) == 4 * HISTORY_BATCH and reading.is_attached
        transcript.scroll_end(animate=False)  # back at the bottom, pruning applies as entries arrive
        await settle(pilot)
        transcript.add_line("notice", "new at the bottom")
        await settle(pilot)
        mounted = len(transcript.entries())
        assert mounted <= MAX_ENTRIES
        assert not reading.is_attached
        # Only history entries were pruned: they went back to the backlog and can be loaded again.
        assert transcript.pruned == 0
        unshown = transcript.unshown
        assert unshown == 400 - len(history(transcript)) and history(transcript)[0].plain_text == entry_text(unshown)
        assert f"↑ {unshown} earlier entries" in marker_text(transcript)
        assert await transcript.load_older() == HISTORY_BATCH
        assert [e.plain_text for e in history(transcript)[:HISTORY_BATCH + 1]] == [
            entry_text(i) for i in range(unshown - HISTORY_BATCH, unshown + 1)]


async def test_pruning_live_entries_counts_everything_above_as_not_shown(project: Path) -> None:
    app = resumed_app(project, 100)
    async with app.run_test(size=SIZE) as pilot:
        transcript = (await started(pilot)).transcript
        transcript.max_entries = 20
        before = len(transcript.entries())  # the 50 history entries and the "Resumed" notice
        for n in range(80):
            transcript.add_line("notice", f"line {n}")
        await settle(pilot)
        mounted = transcript.entries()
        assert len(mounted) <= 20 and mounted[-1].plain_text == "line 79"
        assert transcript.unshown == 0 and not history(transcript)
        total = (400 - HISTORY_BATCH) + before + 80
        assert transcript.pruned == total - len(mounted)
        assert f"↑ {transcript.pruned} earlier entries are not shown" in marker_text(transcript)


async def test_search_finds_and_loads_an_entry_not_yet_mounted(project: Path) -> None:
    app = resumed_app(project, 60)  # 240 entries: turn 3 is far below the newest batch
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started and history(app.transcript))
        assert not any(e.plain_text == "question 3" for e in history(app.transcript))
        await pilot.press("ctrl+f")
        for key in "question 3":
            await pilot.press("space" if key == " " else key)
        await pilot.pause()
        # Only the newest 50 entries (turns 48-60) are mounted. "question 3" also matches questions 30-39, so
        # Enter walks back through those, loading the backlog down to each, and then reaches question 3.
        for _ in range(20):
            current = [e for e in app.transcript.entries() if e.has_class("-current")]
            if current and current[0].plain_text == "question 3":
                break
            await pilot.press("enter")
            await pilot.pause(0.05)
        current = [e for e in app.transcript.entries() if e.has_class("-current")]
        assert current and current[0].plain_text == "question 3"
        assert app.transcript.unshown <= 2 * ENTRIES_PER_TURN  # everything from question 3 on is mounted now


async def test_search_into_the_backlog_stops_at_its_reach(project: Path) -> None:
    from anvil.tui.search import BACKLOG_REACH, SearchBar

    app = resumed_app(project, 200)  # 800 entries; "question 1" (entry 0) is far beyond one search's reach
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started and history(app.transcript))
        await pilot.press("ctrl+f")
        for key in "question 1:":  # matches nothing: the entries read "question 1", no colon
            await pilot.press("space" if key == " " else key)
        unshown = app.transcript.unshown
        await pilot.press("enter")
        await pilot.pause()
        count = str(app.query_one(SearchBar).query_one(".count").render())
        assert "not searched" in count and f"{unshown - BACKLOG_REACH:,}" in count
        assert app.transcript.unshown == unshown  # nothing was mounted for a match that is not there
