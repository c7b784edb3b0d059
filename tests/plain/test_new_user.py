"""What a new user meets in `anvil --plain` (issue 17): the welcome line and the farewell, a first prompt, Ctrl+C
twice to quit, approvals that name every rule they save and the exact test command, Markdown answers, tool lines
sized to the terminal, history through a recalled slash command, /help's hanging indent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.plain.conftest import CTRL_C

COMPOUND = {"name": "run_command", "arguments": {"command": "git status && touch a.txt && ls"}}


async def test_a_new_session_opens_on_the_welcome_line_and_exit_says_how_to_resume(make_repl: Any) -> None:
    repl = make_repl([{"text": "ok"}])
    await repl.wait("Model: scripted · no key needed")
    await repl.wait("/model NAME switches models · /help lists commands and keys")
    await repl.prompt("hello")
    await repl.wait("ok")
    assert await repl.exit() == 0
    await repl.wait(f"Session {repl.runtime.session.id} is saved. Resume it with `anvil -c`")


async def test_a_session_without_a_turn_promises_nothing_on_exit(make_repl: Any) -> None:
    repl = make_repl([])
    await repl.idle()
    assert await repl.exit() == 0
    assert "Resume it" not in repl.screen() and not repl.runtime.session.path.exists()


async def test_a_first_prompt_from_the_command_line_is_sent_at_once(make_repl: Any) -> None:
    import asyncio

    repl = make_repl([{"text": "Fixed it."}], start=False)
    repl.task = asyncio.create_task(repl.repl.run("fix the bug"))
    await repl.wait("› fix the bug")
    await repl.wait("Fixed it.")
    assert repl.runtime.agent.messages[1]["content"] == "fix the bug"
    assert await repl.exit() == 0


async def test_ctrl_c_twice_on_an_empty_prompt_quits(make_repl: Any) -> None:
    repl = make_repl([])
    await repl.idle()
    await repl.send(CTRL_C, then="Press Ctrl+C again to quit")
    await repl.send(CTRL_C)
    assert repl.task is not None
    import asyncio

    assert await asyncio.wait_for(repl.task, 10) == 0


async def test_always_allow_on_a_compound_command_shows_and_saves_every_rule(make_repl: Any, project: Path) -> None:
    turns = [{"tool_calls": [COMPOUND]}, {"text": "first"}, {"tool_calls": [COMPOUND]}, {"text": "second"}]
    repl = make_repl(turns)
    await repl.prompt("go")
    await repl.wait("no rule allows: git status")
    await repl.wait("no rule allows: touch a.txt")
    await repl.send("a", then="Always allow `git status *`, `touch *` and `ls *` from now on? These rules are")
    await repl.send("s", then="always allowed: `git status *`, `touch *` and `ls *` for this session only")
    await repl.wait("first")
    await repl.prompt("again")
    await repl.wait("second")
    assert repl.screen().count("Approve run_command?") == 1  # all three were saved: no second question
    assert await repl.exit() == 0


async def test_the_run_tests_approval_shows_the_exact_command_and_where(make_repl: Any, project: Path) -> None:
    command = "python3 -c 'print(3)'"
    repl = make_repl([{"tool_calls": [{"name": "run_tests", "arguments": {}}]}, {"text": "done"}],
                     test_command=command)
    await repl.prompt("test it")
    await repl.wait("Approve run_tests?")
    await repl.wait(f"$ {command}")
    await repl.wait(f"in {project}")
    await repl.send("n", then="done")
    assert await repl.exit() == 0


async def test_an_answer_is_rendered_as_markdown_in_the_scrollback(make_repl: Any) -> None:
    answer = ("# Findings\n\nThe **bug** is in `count()`:\n\n- one\n- two\n\n```python\nx = 1\n```\n\n"
              "| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.")
    repl = make_repl([{"text": answer}])
    await repl.prompt("explain")
    await repl.wait("Done.")
    await repl.idle()
    shown = repl.screen()
    assert "• one" in shown and "• two" in shown  # list items rendered, not "- one"
    assert "The bug is in count():" in shown  # emphasis and code rendered, markers gone
    assert "────" in shown and " 1  2" in shown  # the table laid out in columns under a rule
    raw = repl.buffer.getvalue()
    assert re.search(r"\x1b\[[0-9;]*;1m(\x1b\[[0-9;]*m)*bug", raw)  # **bug** reached the terminal in bold
    assert await repl.exit() == 0


async def test_tool_lines_use_the_terminal_width(make_repl: Any) -> None:
    long = "echo " + "x" * 300
    repl = make_repl([{"tool_calls": [{"name": "run_command", "arguments": {"command": long}}]}, {"text": "ok"}],
                     auto_approve=True)
    await repl.prompt("go")
    await repl.wait("ok")
    line = next(line for line in repl.screen().splitlines() if line.startswith("● run_command"))
    assert 100 < len(line.split(" ✓")[0]) <= 120  # the terminal is 120 wide: no fixed 100-character cut


async def test_up_walks_history_through_a_recalled_slash_command(make_repl: Any) -> None:
    repl = make_repl([{"text": "ok"}])
    await repl.prompt("an older prompt")
    await repl.wait("ok")
    await repl.prompt("/cost")
    await repl.wait("input tokens")
    await repl.idle()
    await repl.send("\x1b[A")  # Up
    await repl.send("\x1b[A")
    await repl.send("\r", then="› an older prompt")


async def test_help_descriptions_wrap_under_themselves(make_repl: Any, monkeypatch: Any) -> None:
    from anvil.plain.repl import PlainRepl

    monkeypatch.setattr(PlainRepl, "width", property(lambda self: 60))  # a narrow terminal
    repl = make_repl([])
    await repl.prompt("/help")
    await repl.wait("/exit")
    lines = repl.screen().splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("/cost"))
    column = lines[at].index("tokens")
    assert lines[at + 1][:column].strip() == "" and lines[at + 1][column:].strip()  # a hanging indent
    assert await repl.exit() == 0


async def test_undo_names_an_older_turn_and_asks(make_repl: Any, project: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "draft\n"}}
    repl = make_repl([{"tool_calls": [write]}, {"text": "written"}, {"text": "just talk"}])
    await repl.prompt("write a note")
    await repl.wait("written")
    await repl.prompt("what now?")
    await repl.wait("just talk")
    await repl.prompt("/undo")
    await repl.wait("The last turn (2) changed no files. Undo turn 1 ('write a note'), 1 turn back, restoring "
                    "notes.txt (created)? [y/N]")
    await repl.send("n\r", then="Nothing was changed.")
    assert (project / "notes.txt").exists()
    assert await repl.exit() == 0
