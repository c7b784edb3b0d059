"""A connection that drops mid-reply, in `anvil --plain`, through litellm against the scripted OpenAI-compatible
server: the text shown stays, one line says what happened and how to go on, and Enter on an empty prompt has the
model go on (and /continue says when there is nothing to go on with)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prompt_toolkit.input import create_pipe_input

from anvil.config import Settings
from anvil.frontend.prompt import CONTINUE_TEXT
from anvil.runtime import open_runtime
from tests.plain.conftest import Repl
from tests.support.openai_server import ScriptedOpenAIServer


async def test_the_text_stays_one_line_says_how_to_go_on_and_enter_goes_on(project: Path) -> None:
    with ScriptedOpenAIServer([{"text": "The first half of the answer, and then", "drop_after": 4, "chunk_chars": 10},
                               {"text": "the second half."}]) as server, create_pipe_input() as pipe:
        repl = Repl(open_runtime(Settings(model="openai/scripted", api_base=server.url), project), pipe)
        repl.task = asyncio.create_task(repl.repl.run())
        await repl.prompt("explain")
        await repl.wait("The first half of the answer,", timeout=60)
        await repl.wait("dropped in the middle of its reply; the text so far is kept. Press Enter on an empty "
                        "prompt (or type /continue) to have the model go on.")
        assert "overloaded" not in repl.screen() and "Could not connect" not in repl.screen()
        await repl.idle()
        assert len(server.requests) == 1

        await repl.prompt("")  # Enter on an empty prompt
        await repl.wait("the second half.", timeout=30)
        await repl.idle()
        sent = server.requests[1]["messages"]
        assert sent[-2]["content"].startswith("The first half of the answer, \n\n[the connection")
        assert sent[-1] == {"role": "user", "content": CONTINUE_TEXT}

        await repl.prompt("/continue")  # nothing is cut now
        await repl.wait("Nothing to continue: /continue goes on with a reply a dropped connection cut short.")
        await repl.prompt("")
        await asyncio.sleep(0.3)
        assert len(server.requests) == 2
        assert await repl.exit() == 0
