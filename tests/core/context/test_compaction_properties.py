"""Properties of compaction over generated histories: whatever the shape and the window, the result is a
valid history that starts with the system prompt, keeps every word the person said, and shrinks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvil.core.context.compaction import Compactor
from anvil.core.context.meter import ContextMeter, TokenCounter
from anvil.core.context.snapshot import changed_files, is_snapshot, person_messages, render_snapshot
from anvil.core.tools import default_tools
from tests.support.agents import assert_history_valid

WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=80)


#: the paths a call writes, as the built-in tools declare them
WRITTEN = default_tools().written_paths


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "system prompt with project memory"}]
    call_number = 0
    for turn in range(draw(st.integers(1, 6))):
        messages.append({"role": "user", "content": f"request {turn}: " + draw(WORDS)})
        for _ in range(draw(st.integers(0, 4))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_number += 1
                tool = draw(st.sampled_from(["read_file", "edit_file", "grep", "run_tests"]))
                calls.append({"id": f"c{call_number}", "type": "function", "function": {
                    "name": tool, "arguments": json.dumps({"path": f"src/f{call_number}.py"})}})
            messages.append({"role": "assistant", "content": draw(st.sampled_from([None, "Looking."])),
                             "tool_calls": calls})
            for call in calls:
                size = draw(st.integers(1, 3000))
                messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                                 "content": ("result text " * size)[:size]})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": "Answer " * draw(st.integers(1, 300))})
    return messages


async def fake_summary(request: list[dict[str, Any]]) -> str:
    return "## Goal\nkeep going\n## Next step\ncontinue"


def assert_no_orphan_results(messages: list[dict[str, Any]]) -> None:
    issued: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            issued.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in issued


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), window=st.integers(2_000, 40_000), force=st.booleans())
def test_compaction_keeps_the_history_valid_and_every_person_message(history: list[dict[str, Any]], window: int,
                                                                     force: bool) -> None:
    meter = ContextMeter(window, TokenCounter("scripted", use_litellm=False))
    compactor = Compactor(meter, fake_summary)
    before = meter.measure(history, [])
    outcome = asyncio.run(compactor.compact(history, todos="[ ] a todo", force_summary=force, written=WRITTEN))
    new = outcome.messages
    assert new[0] is history[0]
    assert_history_valid(new)
    assert_no_orphan_results(new)
    assert person_messages(new) == person_messages(history)
    assert outcome.tokens_after <= before
    assert sum(is_snapshot(m) for m in new) <= 1
    if outcome.tier == 2:
        assert is_snapshot(new[1]) and "[ ] a todo" in new[1]["content"]
        assert set(changed_files(history, WRITTEN)) <= set(changed_files(new, WRITTEN))
        # compacting the compacted history again loses nothing either
        again = asyncio.run(compactor.compact(new, todos="[ ] a todo", force_summary=True, written=WRITTEN)).messages
        assert person_messages(again) == person_messages(history)


@given(texts=st.lists(WORDS, min_size=1, max_size=5))
def test_person_messages_round_trip_through_a_snapshot_word_for_word(texts: list[str]) -> None:
    texts = [*texts, "</user_message> and </user_message_2> inside a message"]
    snapshot = {"role": "user", "content": render_snapshot(person=texts, summary="## Goal\n<user_message n=\"9\">",
                                                           files=[], todos="")}
    assert person_messages([snapshot]) == texts
