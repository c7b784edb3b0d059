"""What `anvil --plain` shares with the app, shown the same way: approvals that tell the truth, /mode, /undo,
/resume, MCP prompts as slash commands, a long call's progress and the one-line entries
(tests/tui/test_shared_behaviour.py is the app's twin of this file)."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from anvil.config import user_config_dir
from anvil.core.events import ApprovalAnswered, Retrying, ToolProgress
from anvil.core.session.store import SessionError
from tests.support.frontend_scripts import CD_THEN_TOUCH, PROTECTED_REASON, TOUCH, WRITE, WRITE_CONFIG, allow_cd
from tests.support.mcp_servers import demo_config


async def test_always_allow_names_the_files_rules_are_saved_to(make_repl: Any, project: Path) -> None:
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("Approve run_command?")
    await repl.send("a", then="The rule is saved for:")
    await repl.wait("p this project: saved in .anvil/permissions.toml")
    await repl.wait(f"e everywhere: saved in {user_config_dir() / 'permissions.toml'}")
    await repl.send("e", then="always allowed: `touch *` everywhere (saved in")
    await repl.wait("ok")
    assert tomllib.loads((user_config_dir() / "permissions.toml").read_text())["allow"] == ["touch *"]
    await repl.exit()


async def test_the_approval_shows_the_directory_the_policy_evaluated(make_repl: Any, project: Path) -> None:
    allow_cd(project)
    repl = make_repl(CD_THEN_TOUCH)
    await repl.prompt("make it in sub")
    await repl.wait("$ touch here.txt")
    await repl.wait(f"in {project / 'sub'}\r")
    await repl.send("y", then="done")
    assert (project / "sub" / "here.txt").exists()
    await repl.exit()


async def test_writing_anvils_config_asks_even_in_auto_mode_showing_why_and_the_diff(make_repl: Any,
                                                                                       project: Path) -> None:
    repl = make_repl(WRITE_CONFIG, auto_approve=True)
    await repl.prompt("grant yourself everything")
    await repl.wait("Approve write_file?")
    await repl.wait(f"• {PROTECTED_REASON}")
    await repl.wait("+auto_approve = true")
    await repl.send("n", then="tried")
    assert not (project / ".anvil" / "config.toml").exists()
    await repl.exit()


async def test_mode_alone_shows_the_mode_and_the_choices(make_repl: Any) -> None:
    repl = make_repl([])
    await repl.prompt("/mode")
    await repl.wait("Approval mode: ask. Modes: ask, accept_edits, auto, plan; /mode NAME sets one, Shift+Tab "
                    "cycles them.")
    assert repl.repl.session.mode == "ask"
    await repl.exit()


async def test_undo_says_which_turn_and_no_keeps_the_files(make_repl: Any, project: Path) -> None:
    repl = make_repl(WRITE)
    await repl.prompt("write a note")
    await repl.wait("written")
    await repl.prompt("/undo")
    await repl.wait("Undo turn 1 ('write a note'), restoring notes.txt (created)? [y/N]")
    await repl.send("n\r", then="Nothing was changed.")
    assert (project / "notes.txt").read_text() == "draft\n"
    await repl.exit()


async def test_resume_of_a_missing_session_is_one_error_line(make_repl: Any) -> None:
    repl = make_repl([])
    with pytest.raises(SessionError) as missing:
        repl.runtime.store.open("nosuch")
    await repl.prompt("/resume nosuch")
    await repl.wait(f"✗ {missing.value}")
    await repl.exit()


async def test_one_liners_are_the_shared_ones(make_repl: Any) -> None:
    repl = make_repl([], start=False)
    await repl.repl.show(Retrying(0, 3, 1.5, "The provider is overloaded"))
    await repl.wait("↻ The provider is overloaded; retrying in 1.5s (attempt 1 of 3)")
    await repl.repl.show(ApprovalAnswered("c1", "run_command", False, "hard-deny", "Refused: it wipes the disk."))
    await repl.wait("refused by hard-deny: Refused: it wipes the disk.")


async def test_an_mcp_prompt_is_a_slash_command_and_progress_shows_as_a_line(make_repl: Any) -> None:
    repl = make_repl([{"text": "reviewed"}], mcp_servers={"demo": demo_config()})
    session = repl.repl.session
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not session.mcp_prompt_commands() and loop.time() < deadline:
        await asyncio.sleep(0.05)
    completer = repl.repl.prompt.completer.completer
    offered = [(c.text, c.display_meta_text) for c in
               completer.get_completions(Document("/mcp__demo__re"), CompleteEvent())]
    assert offered == [("/mcp__demo__review", "Review a file.")]
    await repl.prompt("/mcp__demo__review app.py")
    await repl.wait("/mcp__demo__review: Review app.py for bugs.")
    await repl.wait("reviewed")
    assert repl.model.calls[0][-1]["content"] == "Review app.py for bugs."
    await repl.prompt("/mcp__demo__review")
    await repl.wait("✗ /mcp__demo__review needs file: /mcp__demo__review file=… [focus=…]")
    await repl.idle()
    await repl.repl.show(ToolProgress("c1", "mcp__demo__count", 2, 4, "step 2"))
    await repl.wait("⋯ mcp__demo__count: 2/4 (50%) · step 2")
    await repl.exit()
