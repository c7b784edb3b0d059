"""A Claude session with thinking on, in the app, against the local Anthropic Messages API server: a multi-step
tool task runs with no API error; its thinking shows as dim, collapsed blocks that Enter or a click expands,
and is back (and sent back) after resuming; /cost shows the cache reads and litellm's price for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.config import Settings
from anvil.core.model.litellm_model import load_litellm
from anvil.runtime import open_runtime
from anvil.tui.app import AnvilApp
from anvil.tui.transcript import AssistantEntry, LineEntry, ThinkingEntry, ToolEntry
from tests.support.agents import CLAUDE
from tests.support.anthropic_rules import sign
from tests.support.anthropic_server import ScriptedAnthropicServer
from tests.tui.conftest import screen_text, submit, wait_for

SIZE = (120, 40)
LIST = {"name": "list_files", "arguments": {"path": "."}}
READ = {"name": "read_file", "arguments": {"path": "README.md"}}


def notices(app: AnvilApp) -> list[str]:
    return [e.text for e in app.transcript.entries() if isinstance(e, LineEntry) and e.kind == "notice"]


def expected_cost(server: ScriptedAnthropicServer) -> float:
    price = load_litellm().model_cost["claude-sonnet-4-5"]
    return sum(u["input_tokens"] * price["input_cost_per_token"]
               + u["cache_read_input_tokens"] * price["cache_read_input_token_cost"]
               + u["cache_creation_input_tokens"] * price["cache_creation_input_token_cost"]
               + u["output_tokens"] * price["output_cost_per_token"] for u in (s.usage for s in server.served) if u)


async def test_thinking_is_shown_collapsed_expands_and_is_back_after_resuming(project: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    (project / "AGENTS.md").write_text("Keep answers short and exact.\n" * 250)  # a system prompt worth caching
    settings = Settings(model=CLAUDE, reasoning="high")
    with ScriptedAnthropicServer([
        {"thinking": "Start with the layout.", "text": "Looking.", "tool_calls": [LIST]},
        {"thinking": "The README says what it is.", "tool_calls": [READ]},
        {"thinking": "It is a tiny demo project.", "text": "A tiny demo project."},
        {"thinking": "Nothing changed since.", "text": "Still the same."},
    ]) as claude:
        settings = settings.model_copy(update={"api_base": claude.url})
        app = AnvilApp(project, runtime=open_runtime(settings, project))
        async with app.run_test(size=SIZE) as pilot:
            await submit(pilot, "what is this project?")
            await wait_for(pilot, lambda: len(claude.served) == 3 and not app.busy, timeout=60)
            assert claude.errors == []
            thoughts = list(app.transcript.query(ThinkingEntry))
            assert [t.text for t in thoughts] == ["Start with the layout.", "The README says what it is.",
                                                  "It is a tiny demo project."]
            assert len(app.transcript.query(ToolEntry)) == 2 and app.transcript.query(AssistantEntry)
            first = thoughts[0]
            body = first.query_one(".body")
            assert not first.expanded and not body.display and "Thought (4 words)" in screen_text(app)
            assert "Start with the layout." not in screen_text(app)  # collapsed: the text waits for a key
            first.focus()
            await pilot.press("enter")
            await wait_for(pilot, lambda: "Start with the layout." in screen_text(app))
            assert first.expanded and body.display
            await pilot.click(ThinkingEntry)
            await wait_for(pilot, lambda: not thoughts[0].expanded)

            app.prompt.focus()
            await submit(pilot, "/cost")
            await wait_for(pilot, lambda: any(text.startswith("Session ") for text in notices(app)))
            cost = next(text for text in notices(app) if text.startswith("Session "))
            read = sum(s.usage["cache_read_input_tokens"] for s in claude.served if s.usage)
            assert read > 0 and f"{read:,} read from the prompt cache" in cost
            assert f"${expected_cost(claude):.4f}" in cost

        # anvil -c: the thinking is back in the transcript, and goes back to the API with its message
        resumed = AnvilApp(project, runtime=open_runtime(settings, project, continue_latest=True))
        async with resumed.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: resumed.started)
            assert [t.text for t in resumed.transcript.query(ThinkingEntry)][:1] == ["Start with the layout."]
            await submit(pilot, "and now?")
            await wait_for(pilot, lambda: len(claude.served) == 4 and not resumed.busy, timeout=60)
        assert claude.errors == []
        sent = claude.requests[3]["messages"][1]["content"][0]
        assert sent == {"type": "thinking", "thinking": "Start with the layout.",
                        "signature": sign("Start with the layout.")}
