"""The trust question in `anvil --plain`: a prompt before the session starts, listing what the folder's
configuration would run; the answer is remembered, and a changed configuration asks again."""

from __future__ import annotations

import asyncio
import io
import shlex
import shutil
from pathlib import Path

import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input

from anvil.config import project_trust
from anvil.frontend.trust import decide, trust_question
from anvil.plain.trust import ask_trust
from tests.plain.conftest import ANSI, CTRL_D, ScreenOutput
from tests.support.cloned_repo import config_text, make_cloned_repo
from tests.support.tmux import Pane, anvil_shell


async def answer(project: Path, *keys: str) -> tuple[bool, str]:
    """Ask about ``project``, type ``keys`` once the prompt is up; the answer and what the person saw."""
    buffer = io.StringIO()
    output = ScreenOutput(buffer, lambda: Size(rows=40, columns=160), enable_cpr=False)
    with create_pipe_input() as pipe:
        task = asyncio.create_task(ask_trust(trust_question(project_trust(project)), input=pipe, output=output))
        for key in keys:
            shown = len(buffer.getvalue())
            for _ in range(500):
                await asyncio.sleep(0.01)
                if "don't trust (this time): " in ANSI.sub("", buffer.getvalue()[shown:]) or task.done():
                    break
            pipe.send_text(key)
        trusted = await asyncio.wait_for(task, 10)
    return trusted, ANSI.sub("", buffer.getvalue())


async def test_the_prompt_lists_what_would_run_and_t_trusts(project: Path) -> None:
    make_cloned_repo(project)
    trusted, shown = await answer(project, "t\r")
    assert trusted is True
    assert "Trust this folder?" in shown and "• hooks: session_start runs `touch hook-ran`" in shown
    assert "• api_base: model requests, with your API key, go to http://127.0.0.1:9/v1" in shown
    assert "t trust this folder · n don't trust (this time): " in shown


@pytest.mark.parametrize("keys", [("n\r",), ("\r",), (CTRL_D,), ("maybe\r", "no\r")])
async def test_anything_but_trust_does_not_trust(project: Path, keys: tuple[str, ...]) -> None:
    make_cloned_repo(project)
    trusted, shown = await answer(project, *keys)
    assert trusted is False
    assert ("Type t to trust this folder" in shown) == (keys[0] == "maybe\r")


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@needs_tmux
def test_plain_asks_before_the_session_and_remembers(tmp_path: Path, project: Path, isolated_env: Path) -> None:
    """`anvil --plain` in a real terminal: the question, `t`, the hook runs; the next start asks nothing, and
    a changed configuration asks again."""
    make_cloned_repo(project)
    (project / ".anvil" / "config.toml").write_text('[[hooks.session_start]]\ncommand = "touch hook-ran"\n')
    anvil = anvil_shell(project, isolated_env, "--plain", "--model", "scripted")
    with Pane("anvil-trust", f"{anvil}; sleep 60", scrollback=200) as tmux:
        tmux.wait_text("Trust this folder?")
        tmux.wait_text("hooks: session_start runs `touch hook-ran`")
        assert not (project / "hook-ran").exists()
        tmux.type("t")
        tmux.send("Enter")
        tmux.wait(lambda: (project / "hook-ran").exists(), "the session_start hook")
        tmux.wait_text("mode: ask")
    assert project_trust(project).remembered
    with Pane("anvil-trust", f"{anvil}; sleep 60", scrollback=200) as tmux:
        tmux.wait_text("mode: ask")
        assert "Trust this folder?" not in tmux.screen()
    (project / ".anvil" / "config.toml").write_text(config_text("http://127.0.0.1:9/v1"))
    with Pane("anvil-trust", f"{anvil} ; echo EXIT=$? > {shlex.quote(str(tmp_path / 'status'))}; sleep 60",
              scrollback=200) as tmux:
        tmux.wait_text("changed since you trusted it")
        tmux.send("Enter")  # Enter alone: not this time
        tmux.wait_text("This folder is not trusted")
        tmux.wait_text("mode: ask")
        tmux.send("C-d")
        tmux.wait(lambda: (tmp_path / "status").exists(), "anvil to exit")
    assert not project_trust(project).remembered and not (project / "verify-ran").exists()


def test_decide_remembers_only_a_yes(project: Path) -> None:
    make_cloned_repo(project)
    assert decide(project_trust(project), False) is False and not project_trust(project).trusted
    assert decide(project_trust(project), True) is None and project_trust(project).trusted
