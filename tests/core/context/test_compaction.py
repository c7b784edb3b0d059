"""Compaction through litellm's real path against the scripted server, with a tiny configured window.

The server answers requests that offer no tools (summary calls) from a queue of their own, so a test
can script the conversation and the summaries separately and see exactly what each request carried.
"""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from anvil.config import Settings, data_dir, user_config_dir
from anvil.core.context.snapshot import SNAPSHOT_MARK, STUB_MARK
from anvil.core.events import CompactionFinished, CompactionStarted, Notice, TodoItem, TurnEnded
from anvil.core.loop.agent import Agent
from anvil.core.model.errors import RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel, load_litellm
from anvil.core.prompts import build_system_prompt
from anvil.core.session.store import SessionStore
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolRegistry, ToolResult
from anvil.runtime import open_runtime
from tests.support.agents import BigTool, EchoTool, assert_history_valid, run
from tests.support.openai_server import ScriptedOpenAIServer

MODEL = "openai/scripted"
SUMMARY = ("## Goal\nA CSV parser.\n## Decisions\nStandard library only.\n## Work done\nparse_csv written.\n"
           "## Errors still open\nnone\n## Next step\nAdd quoting.")
# What the person types: unusual characters, markup, quotes, so "verbatim" is tested, not "similar".
PERSON = [
    'Build a CSV parser called `parse_csv` — keep it in csv_tools.py, no pandas! (é, ü, 中文)',
    'Also: fields may be quoted like "a,b"; tabs\tmatter; and </user_message> is just text here.',
    "Don't touch setup.py.\nSecond line of the same message.",
    "Add tests under tests/test_csv.py, please.",
    "What is left to do?",
    "One more: support semicolons.",
    "And a final check, please.",
]


class SummaryServer(ScriptedOpenAIServer):
    """Requests without tools are summary calls: they are answered from ``summaries`` (a default otherwise)."""

    def __init__(self) -> None:
        super().__init__()
        self.summaries: deque[dict[str, Any]] = deque()

    def _next_turn(self) -> dict[str, Any]:
        if "tools" not in self.requests[-1]:
            with self._lock:
                if self.summaries:
                    return self.summaries.popleft()
            return {"text": SUMMARY}
        return super()._next_turn()

    def main_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "tools" in r]

    def summary_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "tools" not in r]


@pytest.fixture
def srv() -> Any:
    with SummaryServer() as server:
        yield server


def make(server: SummaryServer, root: Path, window: int, *tools: Tool, system: str = "You are a test.",
         **kwargs: Any) -> Agent:
    model = LiteLLMModel(MODEL, api_base=server.url, context_window_override=window,
                         retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    ctx = ToolContext(root=root, data_dir=root / "data")
    return Agent(model, ToolRegistry(list(tools) or [EchoTool()]), ctx, system_prompt=system, **kwargs)


def prose(tokens: int, tag: str) -> str:
    """An assistant reply of about ``tokens`` tokens."""
    return " ".join(f"{tag} sentence {i} explains one more detail of the parser design." for i in range(tokens // 11))


def request_tokens(request: dict[str, Any]) -> int:
    return int(load_litellm().token_counter(model=MODEL, messages=request["messages"], tools=request.get("tools")))


def text_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


def compactions(events: list[Any]) -> list[CompactionFinished]:
    return [e for e in events if isinstance(e, CompactionFinished)]


async def talk(server: SummaryServer, agent: Agent, count: int, *, reply_tokens: int = 450,
               usage: dict[str, int] | None = None, start: int = 0) -> list[Any]:
    """``count`` turns of the person talking and the model answering at length; ``usage`` drives the gauge."""
    events: list[Any] = []
    for n in range(start, start + count):
        turn: dict[str, Any] = {"text": prose(reply_tokens, f"Reply{n}")}
        if usage is not None:
            turn["usage"] = usage
        server.add(turn)
        events += await run(agent, PERSON[n])
        assert events[-1].reason == "done", events[-1]
    return events


async def test_old_tool_results_become_stubs_without_a_model_call(srv: SummaryServer, tmp_path: Path) -> None:
    srv.add(*[{"tool_calls": [{"name": "big", "arguments": {"name": f"file{i}"}}]} for i in range(6)],
            {"text": "All read."})
    agent = make(srv, tmp_path, 4000, BigTool())
    events = await run(agent, "read them all")
    assert events[-1].reason == "done"
    finished = compactions(events)
    assert finished and all(f.tier == 1 and f.ok for f in finished)
    assert all(f.tokens_after < f.tokens_before for f in finished)
    assert not srv.summary_requests()  # tier 1 needs no model call
    last = srv.main_requests()[-1]["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert results[0].startswith(STUB_MARK) and 'big(name="file0")' in results[0]
    assert "Call the tool again" in results[0] and "characters" in results[0]
    assert results[-1].startswith("file5 line 0:")  # the newest result, verbatim
    assert all(request_tokens(r) <= 4000 for r in srv.requests)
    assert_history_valid(agent.messages)


async def test_kept_results_are_bounded_by_tokens_not_by_count(srv: SummaryServer, tmp_path: Path) -> None:
    BigTool.lines = 60
    huge = BigTool()
    srv.add(*[{"tool_calls": [{"name": "big", "arguments": {"name": f"f{i}"}}]} for i in range(3)], {"text": "ok"})
    agent = make(srv, tmp_path, 2500, huge)
    await run(agent, "go")
    last = srv.main_requests()[-1]["messages"]
    kept = [m for m in last if m["role"] == "tool" and not m["content"].startswith(STUB_MARK)]
    assert len(kept) == 1  # two ~700-token results do not fit a quarter of a 2,250-token usable window
    assert all(request_tokens(r) <= 2500 for r in srv.requests)


async def test_summary_snapshot_keeps_every_person_message_todos_and_memory(srv: SummaryServer,
                                                                             tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("PROJECT RULE: indent with tabs.\n")
    system, _ = build_system_prompt(tmp_path, user_config_dir())
    agent = make(srv, tmp_path, 3000, system=system)
    agent.ctx.todos = [TodoItem("Write parse_csv", "completed"), TodoItem("Support quoting", "in_progress")]
    events = await talk(srv, agent, 5)
    started = [e for e in events if isinstance(e, CompactionStarted)]
    finished = compactions(events)
    assert started and started[0].reason == "threshold" and started[0].tokens_before > agent.compactor.trigger
    assert finished[0].tier == 2 and finished[0].ok
    assert 0 < finished[0].tokens_after < finished[0].tokens_before
    summaries = srv.summary_requests()
    assert summaries and all("tools" not in r for r in summaries)
    request = srv.main_requests()[-1]
    messages = request["messages"]
    assert messages[0] == {"role": "system", "content": system} and "PROJECT RULE" in messages[0]["content"]
    assert messages[1]["role"] == "user" and messages[1]["content"].startswith(SNAPSHOT_MARK)
    assert SUMMARY in messages[1]["content"]
    assert "[x] Write parse_csv" in messages[1]["content"] and "[>] Support quoting" in messages[1]["content"]
    whole = text_of(request)
    for said in PERSON[:5]:
        assert said in whole, said
    assert all(request_tokens(r) <= 3000 for r in srv.requests)
    assert_history_valid(agent.messages)


async def test_provider_counts_above_ours_are_trusted(srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000)
    await talk(srv, agent, 3)
    srv.add({"text": "ok"})
    # The provider says the history weighs far more than our tokenizer counts: plan with its number.
    agent.context._anchor = (2600, len(agent.messages))
    events = await run(agent, PERSON[3])
    assert compactions(events)[0].tier == 2 and srv.summary_requests()


async def test_a_long_history_is_summarised_in_pieces(srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000)
    await talk(srv, agent, 4)
    srv.add({"text": "ok"})
    events = [e async for e in agent.compact()]
    summaries = srv.summary_requests()
    assert len(summaries) >= 3  # parts, then a merge
    assert "part 1 of" in summaries[0]["messages"][1]["content"]
    assert "Merge them" in summaries[-1]["messages"][1]["content"]
    assert all(request_tokens(r) <= 3000 for r in summaries)
    assert compactions(events)[-1].tier == 2


async def test_person_messages_survive_repeated_compactions(srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000)
    await talk(srv, agent, 3)
    [e async for e in agent.compact()]
    await talk(srv, agent, 3, start=3)
    [e async for e in agent.compact("the semicolon support")]
    assert "focus on: the semicolon support" in srv.summary_requests()[-1]["messages"][1]["content"]
    srv.add({"text": "Done."})
    await run(agent, PERSON[6])
    whole = text_of(srv.main_requests()[-1])
    for said in PERSON:
        assert whole.count(said) == 1, said
    assert sum(SNAPSHOT_MARK in str(m["content"]) for m in agent.messages) == 1


async def test_a_failing_summary_is_survived_and_three_failures_turn_automatic_off(srv: SummaryServer,
                                                                                   tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000)
    await talk(srv, agent, 3)
    srv.summaries.extend([{"status": 400, "error": "bad request"}] * 3)
    full = {"prompt_tokens": 2600, "completion_tokens": 10}
    events = await talk(srv, agent, 3, start=3, usage=full)  # each turn starts over the threshold
    finished = compactions(events)
    assert [f.ok for f in finished] == [False, False]  # the first of the three turns was under it
    assert "summary request failed" in finished[0].message.lower()
    srv.add({"text": "ok", "usage": full})
    events = await run(agent, PERSON[6])
    assert not compactions(events)[-1].ok
    notice = next(e for e in events if isinstance(e, Notice))
    assert "Automatic compaction is now off" in notice.message and "/compact" in notice.message
    assert events[-1].reason == "done"
    srv.add({"text": "still answering"})
    events = await run(agent, "anything else?")
    assert not compactions(events) and events[-1].reason == "done"


async def test_failed_summary_on_an_overfull_history_falls_back_to_a_plain_snapshot(
        srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000)
    quiet = {"prompt_tokens": 100, "completion_tokens": 10}  # a provider that under-reports: no trigger
    await talk(srv, agent, 6, reply_tokens=500, usage=quiet)
    srv.summaries.append({"status": 400, "error": "bad request"})
    srv.requests.clear()
    events = [e async for e in agent.compact()]
    finished = compactions(events)[-1]
    assert finished.tier == 2 and not finished.ok and "no summary" in finished.message
    snapshot = agent.messages[1]["content"]
    assert snapshot.startswith(SNAPSHOT_MARK) and "No summary: the summary request failed" in snapshot
    for said in PERSON[:5]:
        assert said in snapshot
    assert finished.tokens_after <= agent.context.usable


async def test_context_overflow_compacts_and_retries_once(srv: SummaryServer, tmp_path: Path) -> None:
    overflow = {"status": 400, "error": "This model's maximum context length is 3000 tokens. However, your "
                                        "messages resulted in 3400 tokens."}
    agent = make(srv, tmp_path, 3000)
    await talk(srv, agent, 3)
    srv.add(overflow, {"text": "Recovered after compaction."})
    events = await run(agent, PERSON[3])
    started = next(e for e in events if isinstance(e, CompactionStarted))
    assert started.reason == "overflow" and compactions(events)[-1].tier == 2
    assert events[-1].reason == "done"
    assert srv.main_requests()[-1]["messages"][1]["content"].startswith(SNAPSHOT_MARK)
    # A second overflow right after the retry is an error: one retry, not a loop.
    srv.add(overflow, overflow, {"text": "never"})
    events = await run(agent, PERSON[4])
    ended = events[-1]
    assert isinstance(ended, TurnEnded) and ended.reason == "error" and "longer than the model" in ended.message
    assert len([e for e in events if isinstance(e, CompactionStarted)]) == 1


async def test_resume_after_compaction_restores_the_compacted_state(srv: SummaryServer, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "AGENTS.md").write_text("PROJECT RULE: indent with tabs.\n")
    store = SessionStore(data_dir(), root)
    session = store.create(MODEL, "test")
    system, _ = build_system_prompt(root, user_config_dir())
    agent = make(srv, root, 3000, system=system, session=session)
    await talk(srv, agent, 3)
    [e async for e in agent.compact()]
    await talk(srv, agent, 1, start=3)
    session.close()
    model = LiteLLMModel(MODEL, api_base=srv.url, context_window_override=3000)
    runtime = open_runtime(Settings(model=MODEL, api_base=srv.url), root, resume=session.id, model=model)
    resumed = runtime.agent.messages
    assert resumed[1:] == agent.messages[1:]
    assert resumed[1]["content"].startswith(SNAPSHOT_MARK)
    assert "PROJECT RULE" in resumed[0]["content"]
    # The file still holds the full history from before the compaction, for audit and rewind.
    raw = session.path.read_text()
    assert prose(450, "Reply0")[:200] in raw and '"t": "compaction"' in raw
    runtime.session.close()


async def test_automatic_compaction_can_be_turned_off(srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000, compact_threshold=False)
    events = await talk(srv, agent, 3, usage={"prompt_tokens": 2900, "completion_tokens": 10})
    assert not compactions(events)


async def test_an_interrupted_summary_leaves_the_history_as_it_was(srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000)
    await talk(srv, agent, 3)
    before = list(agent.messages)
    srv.chunk_delay = 0.05
    srv.summaries.append({"text": SUMMARY * 20})
    asyncio.get_running_loop().call_later(0.3, agent.interrupt)
    events = [e async for e in agent.compact()]
    finished = compactions(events)[-1]
    assert not finished.ok and finished.tier == 0 and "Interrupted" in finished.message
    assert agent.messages == before


class PathArgs(ToolArgs):
    path: str


class PatchTool(Tool):
    """Changes a file, under a name no built-in tool has: the snapshot must find it by the paths it declares."""

    name = "patch"
    description = "Patch a file."
    Args = PathArgs
    kind = "edit"
    mutates = True
    approval = "edit"

    def write_targets(self, args: PathArgs) -> list[str]:
        return [args.path]

    async def run(self, args: PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"patched {args.path}")


class PeekTool(Tool):
    name = "peek"
    description = "Read a file."
    Args = PathArgs
    kind = "read"

    async def run(self, args: PathArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"{args.path} says hello")


async def test_the_snapshot_lists_the_files_that_edit_tools_changed(srv: SummaryServer, tmp_path: Path) -> None:
    agent = make(srv, tmp_path, 3000, PatchTool(), PeekTool())
    srv.add({"tool_calls": [{"name": "peek", "arguments": {"path": "seen.md"}},
                            {"name": "patch", "arguments": {"path": "notes.md"}}]}, {"text": "Patched."})
    await run(agent, PERSON[0])
    await talk(srv, agent, 3, start=1)
    [e async for e in agent.compact()]
    snapshot = agent.messages[1]["content"]
    assert snapshot.startswith(SNAPSHOT_MARK)
    files = snapshot.split("## Files created or modified (from the tool calls)\n")[1].split("\n## ")[0]
    assert files.splitlines() == ["- notes.md"]  # what the edit tool changed, not what the read tool read
