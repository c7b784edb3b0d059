"""A connection that drops mid-reply, in the app, through litellm against the scripted OpenAI-compatible server: the
text shown stays, one line says what happened and how to go on, and Enter on an empty prompt has the model go on."""

from __future__ import annotations

from pathlib import Path

from anvil.config import Settings
from anvil.frontend.prompt import CONTINUE_TEXT
from anvil.runtime import open_runtime
from anvil.tui.app import AnvilApp
from anvil.tui.transcript import LineEntry
from tests.support.openai_server import ScriptedOpenAIServer
from tests.tui.conftest import screen_text, submit, wait_for

SIZE = (140, 40)


def errors(app: AnvilApp) -> list[str]:
    return [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == "error"]


async def test_the_text_stays_one_line_says_how_to_go_on_and_enter_goes_on(project: Path) -> None:
    with ScriptedOpenAIServer([{"text": "The first half of the answer, and then", "drop_after": 4, "chunk_chars": 10},
                               {"text": "the second half."}]) as server:
        settings = Settings(model="openai/scripted", api_base=server.url)
        app = AnvilApp(project, runtime=open_runtime(settings, project))
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, "explain")
            await wait_for(pilot, lambda: errors(app) and not app.busy, timeout=60)
            [line] = errors(app)
            assert "dropped in the middle of its reply; the text so far is kept." in line
            assert line.endswith("Press Enter on an empty prompt (or type /continue) to have the model go on.")
            assert "overloaded" not in line and "Could not connect" not in line
            assert "The first half of the answer," in screen_text(app)
            assert len(server.requests) == 1

            await pilot.press("enter")  # the prompt is empty
            await wait_for(pilot, lambda: len(server.requests) == 2 and not app.busy, timeout=30)
            sent = server.requests[1]["messages"]
            assert sent[-2]["content"].startswith("The first half of the answer, \n\n[the connection")
            assert sent[-1] == {"role": "user", "content": CONTINUE_TEXT}
            await wait_for(pilot, lambda: "the second half." in screen_text(app))
            assert "The first half of the answer," in screen_text(app)

            await pilot.press("enter")  # nothing is cut now: an empty Enter sends nothing
            await pilot.pause(0.3)
            assert len(server.requests) == 2 and not app.busy
