"""A model call cancelled while litellm prepares it (an interrupt, Ctrl+C Ctrl+C, the app closing) leaves nothing
behind: no coroutine that was never awaited, no stream left open.

litellm's ``acompletion`` builds the request in a worker thread, which returns the coroutine that makes the HTTP
call; cancelled while that thread ran, the coroutine was dropped unawaited, and Python printed "RuntimeWarning:
coroutine 'OpenAIChatCompletion.async_streaming' was never awaited" over the terminal. Each scenario runs in a
Python of its own with warnings as errors (``-W error``; pytest would catch what a finaliser reports itself), through
litellm's real path against the scripted server, to the end of the interpreter. The worker thread is only made
slower (the window is a few milliseconds otherwise), so that the interrupt lands in it every time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO

SETUP = """
import asyncio, sys, threading, time
from functools import partial
from pathlib import Path
from anvil.config import Settings
from anvil.core.events import TextDelta
from anvil.runtime import open_runtime
from tests.support.agents import ended, run
from tests.support.openai_server import ScriptedOpenAIServer

def slow_preparation(started):
    # litellm's request building in its worker thread, 0.3 s longer; `started` is set when it begins
    loop = asyncio.get_running_loop()
    real = loop.run_in_executor
    def run_in_executor(executor, func, *args):
        inner = func.args[0] if isinstance(func, partial) and func.args else None
        if getattr(getattr(inner, "func", None), "__name__", "") == "completion":
            def slowly():
                started.set()
                time.sleep(0.3)
                return func()
            return real(executor, slowly, *args)
        return real(executor, func, *args)
    loop.run_in_executor = run_in_executor

async def as_a_call_starts(started, turn_text, agent):
    started.clear()
    turn = asyncio.create_task(run(agent, turn_text))
    while not started.is_set():
        await asyncio.sleep(0.005)
    return turn

server = ScriptedOpenAIServer([{"text": "word " * 100} for _ in range(5)], chunk_delay=0.05).start()
runtime = open_runtime(Settings(model="openai/scripted", api_base=server.url), Path.cwd(), interactive=False)
agent = runtime.agent
"""

TWICE = """
async def main():
    started = threading.Event()
    slow_preparation(started)
    for text in ("first", "second"):  # Ctrl+C Ctrl+C: two interrupts, each as a call starts
        turn = await as_a_call_starts(started, text, agent)
        agent.interrupt()
        assert ended(await asyncio.wait_for(turn, 5)).reason == "interrupted"
    turn = await as_a_call_starts(started, "third", agent)
    turn.cancel()  # a front end's worker cancelled outright
    try:
        await turn
    except asyncio.CancelledError:
        pass
    await asyncio.sleep(0.6)  # the abandoned calls finish preparing; their streams are closed
    events = await run(agent, "again")  # and the session goes on
    assert ended(events).reason == "done", ended(events).message
    assert sum(isinstance(e, TextDelta) for e in events) > 3
    await runtime.close()

asyncio.run(main())
print("ok")
"""

CLOSE_AT_ONCE = """
async def main():  # the app: the interrupt, then at once the session closes and the event loop ends
    started = threading.Event()
    slow_preparation(started)
    turn = await as_a_call_starts(started, "go", agent)
    agent.interrupt()
    await runtime.close()  # what every front end does on its way out
    turn.cancel()  # the app's worker, ended with the app

asyncio.run(main())  # ending the loop cancels every task left
print("ok")
"""


@pytest.mark.parametrize("scenario", [TWICE, CLOSE_AT_ONCE], ids=["interrupted-twice", "closed-at-once"])
def test_a_call_cancelled_while_it_is_prepared_leaves_no_coroutine_unawaited(scenario: str, project: Path,
                                                                             tmp_path: Path) -> None:
    script = tmp_path / "scenario.py"
    script.write_text(textwrap.dedent(SETUP) + textwrap.dedent(scenario))
    # Not errors: litellm's own use of pydantic's deprecated attributes (pyproject says why), and the connections
    # litellm's HTTP client pools for the life of the process, still open when the interpreter ends right after.
    result = subprocess.run([sys.executable, "-W", "error", "-W", "ignore::DeprecationWarning", "-W",
                             "ignore::ResourceWarning", str(script)],
                            cwd=project, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "never awaited" not in result.stderr, result.stderr
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr, result.stderr
