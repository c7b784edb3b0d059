"""The warm-up after the first paint: step by step in the pauses of typing, hurried by a sent prompt.

The app builds its own runtime here (no runtime handed in), as ``anvil`` does. The idle time is raised
above anything a busy machine could put between two test key presses, so "no step started while keys
came" does not depend on the machine's speed; nothing here times performance.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.core.context.meter import TokenCounter
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.scripted import ScriptedModel
from anvil.tui.app import AnvilApp
from anvil.tui.transcript import AssistantEntry, LineEntry, UserEntry
from anvil.tui.warmup import WarmUp, warm_tokenizer
from tests.support.openai_server import ScriptedOpenAIServer
from tests.tui.conftest import submit, wait_for

SIZE = (100, 30)
LITELLM_STEPS = ["openai", "aiohttp", "jinja2", "litellm", "client", "tool-calls", "tokenizer"]


def typing_app(project: Path, flags: dict[str, Any], idle: float, **kwargs: Any) -> AnvilApp:
    """An app whose person is typing from the first paint on."""
    app = AnvilApp(project, flags=flags, **kwargs)
    app.warm_up.idle = idle
    app.warm_up.key_pressed()
    return app


async def test_no_step_starts_while_keys_come_and_all_run_after_a_pause(project: Path) -> None:
    app = typing_app(project, {"model": "scripted"}, idle=1.0)
    async with app.run_test(size=SIZE) as pilot:
        loop = asyncio.get_running_loop()
        typing_until = loop.time() + 1.5  # longer than the idle time: only the keys can hold the steps back
        typed = 0
        while loop.time() < typing_until:
            await pilot.press("x")
            typed += 1
            await asyncio.sleep(0.05)
        assert app.warm_up.started == []
        assert app.runtime is None and not app.started
        assert app.prompt.text == "x" * typed  # every key was taken while anvil waited to warm up
        await wait_for(pilot, lambda: app.warm_up.done)
        assert app.warm_up.started == ["themes", "settings", "runtime", "heap"]  # the scripted model: no more
        assert app.started and app.runtime is not None


async def test_mcp_is_loaded_in_a_pause_of_typing(project: Path, tmp_path: Path) -> None:
    from anvil.config import Settings
    from tests.support.mcp_servers import demo_config

    settings = Settings(model="scripted", mcp_servers={"demo": demo_config()})
    app = typing_app(project, {}, idle=1.0, settings=settings)
    async with app.run_test(size=SIZE) as pilot:
        loop = asyncio.get_running_loop()
        typing_until = loop.time() + 1.5
        while loop.time() < typing_until:
            await pilot.press("x")
            await asyncio.sleep(0.05)
        assert "mcp" not in app.warm_up.started
        await wait_for(pilot, lambda: "mcp" in app.warm_up.finished, timeout=30)
        assert app.runtime is not None and app.runtime.mcp is not None
        await asyncio.wait_for(app.runtime.mcp.wait_started(), 30)
        await wait_for(pilot, lambda: "mcp__demo__add" in app.runtime.agent.tools.names(), timeout=30)


async def test_a_prompt_sent_early_with_the_scripted_model_is_answered(project: Path) -> None:
    app = typing_app(project, {"model": "scripted"}, idle=600, model=ScriptedModel([{"text": "Scripted."}]))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"hello")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.started and not app.busy and app.transcript.query(AssistantEntry))
        assert app.warm_up.started == ["themes", "settings", "runtime"]  # the heap waits for a quiet keyboard
        users = list(app.transcript.query(UserEntry))
        assert [e.text for e in users] == ["hello"] and not users[0].queued  # the queued copy was replaced


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")  # the local server ignores it; preflight wants one
    with ScriptedOpenAIServer([{"text": "pong from the server"}]) as server:
        yield server


async def test_a_prompt_sent_early_hurries_every_step_and_the_tokenizer_is_warm_before_the_call(
        project: Path, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # An idle time no test waits out: only the prompt can get the steps going.
    app = typing_app(project, {"model": "openai/scripted", "api_base": openai_server.url}, idle=600)
    counted_on_loop: list[bool] = []  # per count with litellm's tokenizer: was it on the event loop's thread?
    at_first_call: list[tuple[list[str], list[bool]]] = []
    count_message, stream = TokenCounter.count_message, LiteLLMModel.stream

    def spy_count(self: TokenCounter, message: dict[str, Any]) -> int:
        if self.use_litellm:
            counted_on_loop.append(threading.current_thread() is threading.main_thread())
        return count_message(self, message)

    def spy_stream(self: LiteLLMModel, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        at_first_call.append((list(app.warm_up.finished), list(counted_on_loop)))
        return stream(self, messages, tools)

    monkeypatch.setattr(TokenCounter, "count_message", spy_count)
    monkeypatch.setattr(LiteLLMModel, "stream", spy_stream)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"ping")
        assert app.warm_up.started == []
        await pilot.press("enter")
        await wait_for(pilot, lambda: [e.text for e in app.transcript.query(AssistantEntry)]
                       == ["pong from the server"], timeout=60)
    # Settling the heap holds the GIL and no answer needs it: the hurry did not start it (the keyboard was
    # never quiet for the idle time), and the prompt did not wait for it.
    assert app.warm_up.started == ["themes", "settings", "runtime", *LITELLM_STEPS]
    finished, on_loop = at_first_call[0]
    assert finished == app.warm_up.started  # the prompt waited for all of what it needs
    # The agent's counter first used litellm's tokenizer (which loads its encoding) in the warm-up's thread;
    # the turn's own counting, on the event loop, came after that.
    assert on_loop and on_loop[0] is False
    assert openai_server.requests[0]["messages"][-1]["content"] == "ping"


async def test_model_switch_warms_the_new_model_and_a_prompt_sent_meanwhile_waits_for_it(
        project: Path, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from anvil.core.model import litellm_model

    order: list[str] = []
    preflight, warm_client, stream = LiteLLMModel.preflight, litellm_model.warm_client, LiteLLMModel.stream

    def slow_preflight(self: LiteLLMModel) -> str | None:
        time.sleep(0.5)  # long enough for the prompt below to arrive while the switch is still going on
        order.append("checked")
        return preflight(self)

    def spy_warm_client(model: str) -> None:
        order.append("warmed")
        warm_client(model)

    def spy_stream(self: LiteLLMModel, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        order.append("called")
        return stream(self, messages, tools)

    monkeypatch.setattr(LiteLLMModel, "preflight", slow_preflight)
    monkeypatch.setattr(litellm_model, "warm_client", spy_warm_client)
    monkeypatch.setattr(LiteLLMModel, "stream", spy_stream)
    app = AnvilApp(project, flags={"model": "scripted", "api_base": openai_server.url},
                   model=ScriptedModel([{"text": "from the scripted model"}], window=10_000))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        small_window = app.runtime.agent.context.usable  # type: ignore[union-attr]
        await submit(pilot, "/model openai/scripted")
        await wait_for(pilot, lambda: app.model_loading)
        await pilot.press(*"ping")  # the app keeps taking keys while the model loads
        await pilot.press("enter")
        assert app.prompt.text == "" and [e.text for e in app.transcript.query(UserEntry)] == ["ping"]
        await wait_for(pilot, lambda: [e.text for e in app.transcript.query(AssistantEntry)]
                       == ["pong from the server"], timeout=60)
        notices = [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == "notice"]
        assert "Model switched to openai/scripted." in notices
        assert app.status.state.model == "openai/scripted"
        # The gauge measures against the new model's window.
        assert app.status.state.window == app.runtime.agent.context.usable != small_window  # type: ignore[union-attr]
    assert order == ["checked", "warmed", "called"]  # the prompt waited for the warm-up, then went to the new model
    assert openai_server.requests[0]["messages"][-1]["content"] == "ping"


async def test_a_model_problem_found_while_warming_up_is_told(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = AnvilApp(project, flags={"model": "openai/gpt-4o"})
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.warm_up.done, timeout=60)
        notices = [e.text for e in app.transcript.entries()
                   if isinstance(e, LineEntry) and e.kind == "notice" and "No API key" in e.text]
        assert notices and "OPENAI_API_KEY" in notices[0]


async def test_until_quiet_waits_after_a_key_and_a_hurry_ends_the_wait() -> None:
    warm = WarmUp(idle=600)
    await asyncio.wait_for(warm.until_quiet(), 5)  # nobody has typed: no wait
    warm.key_pressed()
    waiting = asyncio.ensure_future(warm.until_quiet())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    warm.hurry()
    await asyncio.wait_for(waiting, 5)
    assert await warm.run("step", lambda: 42) == 42 and warm.started == warm.finished == ["step"]


async def test_a_step_no_prompt_needs_waits_for_a_pause_even_when_hurried() -> None:
    warm = WarmUp(idle=0.3)
    warm.hurry()
    warm.key_pressed()
    started = time.monotonic()
    await asyncio.wait_for(warm.until_quiet(hurried=False), 5)
    assert time.monotonic() - started >= 0.25
    started = time.monotonic()
    await asyncio.wait_for(warm.until_quiet(), 5)  # hurried: no wait
    assert time.monotonic() - started < 0.25


def test_warm_tokenizer_counts_only_with_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    import anvil.core.model.litellm_model

    monkeypatch.setattr(anvil.core.model.litellm_model, "load_litellm", lambda: None)

    class Counter:
        def __init__(self, use_litellm: bool) -> None:
            self.use_litellm = use_litellm
            self.counted: list[dict[str, Any]] = []

        def count_message(self, message: dict[str, Any]) -> int:
            self.counted.append(message)
            return 1

    estimate, litellm = Counter(False), Counter(True)
    warm_tokenizer(estimate)  # type: ignore[arg-type]
    warm_tokenizer(litellm)  # type: ignore[arg-type]
    assert estimate.counted == [] and len(litellm.counted) == 1


def test_settling_the_heap_freezes_what_start_up_loaded(restore_gc: None) -> None:
    import gc

    from anvil.tui.warmup import GC_THRESHOLDS, settle_heap

    loaded = [object()]  # a container, so the collector tracks it: like a module's tables
    assert any(obj is loaded for obj in gc.get_objects())
    settle_heap()
    assert gc.get_threshold() == GC_THRESHOLDS
    assert not any(obj is loaded for obj in gc.get_objects())  # frozen: no later collection walks it
