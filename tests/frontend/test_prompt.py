"""Prompt preparation, once for both front ends: commands or messages, @path files, problems as notices."""

from __future__ import annotations

from pathlib import Path

from anvil.core.events import Notice, TurnStarted
from anvil.frontend.prompt import is_command, prepare_prompt, prompt_turn
from tests.frontend.conftest import MakeSession, events_of


def test_commands_and_messages() -> None:
    assert is_command("/help") and not is_command("//etc/hosts is odd") and not is_command("hi /help")


def test_mentioned_files_are_attached_and_problems_kept(project: Path) -> None:
    (project / "notes.txt").write_text("remember the milk\n")
    (project / "blob.bin").write_bytes(b"\0" * 10)
    prompt = prepare_prompt("read @notes.txt and @blob.bin", project)
    assert prompt.typed == "read @notes.txt and @blob.bin" and prompt.attached == ("notes.txt",)
    assert prompt.text.endswith('<file path="notes.txt">\nremember the milk\n</file>')
    assert prompt.problems == ("@blob.bin was not attached (binary or over 200 kB); the model can read it with "
                               "read_file.",)
    assert prepare_prompt("//etc is a directory", project).text == "/etc is a directory"


async def test_a_turn_tells_the_problems_first_then_sends_the_prepared_text(make_session: MakeSession,
                                                                            project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\0" * 10)
    (project / "notes.txt").write_text("remember the milk\n")
    session = make_session([{"text": "ok"}])
    events = await events_of(prompt_turn(session, prepare_prompt("see @blob.bin and @notes.txt", project)))
    assert isinstance(events[0], Notice) and events[0].message.startswith("@blob.bin was not attached")
    assert isinstance(events[1], TurnStarted)
    sent = session.messages[0]["content"]
    assert sent.startswith("see @blob.bin and @notes.txt") and "remember the milk" in sent
