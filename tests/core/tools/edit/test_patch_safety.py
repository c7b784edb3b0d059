"""apply_patch under the safeguards every file change shares: protected paths ask in every mode, links out of the
project are refused, a failure midway leaves no file changed (or says which), and undo restores every file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from anvil.config import load_settings
from anvil.core.context.snapshot import changed_files
from anvil.core.events import ApprovalDecision, ApprovalRequested, ToolResultEvent
from anvil.core.loop.stages import StageTracker
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy, Mode
from anvil.core.session.checkpoints import FileCheckpointStore
from anvil.core.session.undo import UndoManager
from anvil.core.tools.base import ToolContext, ToolRegistry, ToolResult
from anvil.core.tools.edit.patch_tool import ApplyPatchArgs, ApplyPatchTool
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files import changes
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool
from anvil.core.tools.files.safe_io import TEMP_SUFFIX, Location
from anvil.runtime import open_runtime


async def _nobody(event: Any) -> Any:  # an interactive front end's ask; the policy itself never calls it
    raise AssertionError("the policy must not ask by itself")


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(root=project, data_dir=tmp_path / "data", ask=_nobody)


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


async def apply(ctx: ToolContext, text: str) -> ToolResult:
    return await ApplyPatchTool().run(ApplyPatchArgs(input=text), ctx)


async def given(ctx: ToolContext, project: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_bytes(data)
        await ReadFileTool().run(ReadFileArgs(path=name), ctx)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- protected paths -------------------------------------------------------------------------------------------

PROTECTED_PATCHES = {
    "update .git/config": (patch("*** Update File: .git/config", "-[core]", "+[core]", "+\tfsmonitor = ./x"),
                           "git's own files: .git/config"),
    "add .anvil/config.toml": (patch("*** Add File: .anvil/config.toml", "+auto_approve = true"),
                               "anvil's own configuration: .anvil/config.toml"),
    "move onto .bashrc": (patch("*** Update File: notes.sh", "*** Move to: .bashrc"),
                          "a shell start-up file: .bashrc"),
    "delete a git hook": (patch("*** Delete File: .git/hooks/pre-commit"), "git's own files: .git/hooks/pre-commit"),
    "one protected file among others": (patch("*** Add File: src/ok.py", "+x = 1", "*** Update File: .git/config",
                                              "-[core]", "+[core]"), "git's own files: .git/config"),
}


@pytest.mark.parametrize("mode", ["ask", "accept_edits", "auto"])
@pytest.mark.parametrize("case", PROTECTED_PATCHES, ids=list(PROTECTED_PATCHES))
def test_a_patch_touching_a_protected_path_asks_in_every_mode(ctx: ToolContext, mode: Mode, case: str) -> None:
    text, reason = PROTECTED_PATCHES[case]
    found = ApprovalPolicy(mode=mode, auto_approve=mode == "auto").evaluate(ApplyPatchTool(), ApplyPatchArgs(
        input=text), ctx)
    assert (found.action, found.by) == ("ask", "protected path")
    assert found.reasons[0].startswith(reason)
    assert found.suggested_pattern == f"apply_patch(path:{reason.split(': ')[1]})"


def test_write_targets_name_every_file_the_patch_writes_and_nothing_for_an_unreadable_patch() -> None:
    text = patch("*** Add File: a.txt", "+a", "*** Update File: b.txt", "*** Move to: c/d.txt", "@@", "-b", "+B",
                 "*** Delete File: e.txt")
    assert ApplyPatchTool().write_targets(ApplyPatchArgs(input=text)) == ["a.txt", "b.txt", "c/d.txt", "e.txt"]
    assert ApplyPatchTool().write_targets(ApplyPatchArgs(input="*** Add File: .git/config\n+x")) == []


def test_headless_a_protected_patch_is_refused_even_with_auto_approve(ctx: ToolContext) -> None:
    ctx.ask = None
    text, _ = PROTECTED_PATCHES["update .git/config"]
    found = ApprovalPolicy(mode="auto", auto_approve=True).evaluate(ApplyPatchTool(), ApplyPatchArgs(input=text), ctx)
    assert found.action == "deny" and "nobody can approve here" in found.message


async def test_through_the_loop_auto_approve_still_asks_and_a_no_writes_nothing(project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    hostile = PROTECTED_PATCHES["update .git/config"][0]
    script = [{"tool_calls": [{"name": "read_file", "arguments": {"path": ".git/config"}}]},
              {"tool_calls": [{"name": "apply_patch", "arguments": {"input": hostile}}]}, {"text": "done"}]
    settings = load_settings(project, {"auto_approve": True, "edit_tools": "patch"}, environ={})
    runtime = open_runtime(settings, project, model=ScriptedModel(script), interactive=True)
    asked: list[ApprovalRequested] = []
    try:
        async for event in runtime.agent.run_turn("go"):
            if isinstance(event, ApprovalRequested):
                asked.append(event)
                event.answer(ApprovalDecision(False))
            if isinstance(event, ToolResultEvent) and event.name == "apply_patch":
                assert not event.ok
    finally:
        await runtime.close()
    assert [a.tool for a in asked] == ["apply_patch"]
    assert asked[0].diff is not None and "+\tfsmonitor = ./x" in asked[0].diff
    assert (project / ".git" / "config").read_text() == "[core]\n"


async def test_a_protected_file_reached_through_a_link_is_refused(ctx: ToolContext, project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    (project / "gitcfg").symlink_to(project / ".git" / "config")
    text = patch("*** Update File: gitcfg", "-[core]", "+[core]", "+\thooksPath = /tmp")
    found = ApprovalPolicy(mode="auto").evaluate(ApplyPatchTool(), ApplyPatchArgs(input=text), ctx)
    assert found.action == "deny" and "leads through a symbolic link" in found.message
    with pytest.raises(ToolError, match="leads through a symbolic link"):
        await apply(ctx, text)
    assert (project / ".git" / "config").read_text() == "[core]\n"


# --- links and hard links out of the project -------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("secret\n")
    return directory


@pytest.mark.parametrize("text", [
    patch("*** Add File: out/new.txt", "+planted"),
    patch("*** Update File: out/secret.txt", "-secret", "+changed"),
    patch("*** Update File: secret-link.txt", "-secret", "+changed"),
    patch("*** Delete File: secret-link.txt"),
    patch("*** Update File: mine.txt", "*** Move to: out/mine.txt"),
    patch("*** Add File: ok.txt", "+fine", "*** Add File: out/new.txt", "+planted"),
], ids=["add", "update-in-linked-dir", "update-linked-file", "delete-linked-file", "move-into-linked-dir",
        "second-file-outside"])
async def test_a_patch_through_a_link_out_of_the_project_is_refused(ctx: ToolContext, project: Path, outside: Path,
                                                                    text: str) -> None:
    await given(ctx, project, {"mine.txt": b"mine\n"})
    (project / "out").symlink_to(outside)
    (project / "secret-link.txt").symlink_to(outside / "secret.txt")
    before_inside, before_outside = tree(project), tree(outside)
    with pytest.raises(ToolError, match="outside the project"):
        await apply(ctx, text)
    assert tree(outside) == before_outside
    assert tree(project) == before_inside


async def test_a_file_with_another_hard_link_is_not_patched(ctx: ToolContext, project: Path, outside: Path) -> None:
    await given(ctx, project, {"a.txt": b"a\n"})
    os.link(outside / "secret.txt", project / "linked.txt")
    with pytest.raises(ToolError, match="2 hard links"):
        await apply(ctx, patch("*** Update File: a.txt", "-a", "+A", "*** Update File: linked.txt", "-secret",
                               "+changed"))
    assert (outside / "secret.txt").read_text() == "secret\n" and (project / "a.txt").read_text() == "a\n"


# --- all or nothing --------------------------------------------------------------------------------------------


async def test_a_patch_that_fails_midway_puts_back_every_file(ctx: ToolContext, project: Path) -> None:
    await given(ctx, project, {"a.txt": b"a\n", "gone.txt": b"bye\n", "blocker": b"a file, not a directory\n"})
    before = tree(project)
    with pytest.raises(ToolError) as caught:
        await apply(ctx, patch("*** Update File: a.txt", "-a", "+A", "*** Delete File: gone.txt",
                               "*** Add File: blocker/new.txt", "+n"))
    message = str(caught.value)
    assert message.startswith("Could not write blocker/new.txt")
    assert "The files already changed (a.txt) were put back. Nothing was changed" in message
    assert tree(project) == before  # the deletion never happened: files are written before any is deleted
    assert not list(project.rglob(f"*{TEMP_SUFFIX}"))
    # the model's read of a.txt still holds: the same bytes are back
    await apply(ctx, patch("*** Update File: a.txt", "-a", "+A"))
    assert (project / "a.txt").read_bytes() == b"A\n"


async def test_a_file_that_cannot_be_put_back_is_named(ctx: ToolContext, project: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    await given(ctx, project, {"a.txt": b"a\n", "b.txt": b"b\n"})
    real_replace = changes.replace_file

    def someone_edits_a_then_the_disk_fills(location: Location, data: bytes, *args: Any) -> os.stat_result:
        if location.name == "b.txt":
            (project / "a.txt").write_bytes(b"the person's edit\n")
            raise OSError(28, "No space left on device")
        return real_replace(location, data, *args)

    monkeypatch.setattr(changes, "replace_file", someone_edits_a_then_the_disk_fills)
    with pytest.raises(ToolError) as caught:
        await apply(ctx, patch("*** Update File: a.txt", "-a", "+A", "*** Update File: b.txt", "-b", "+B"))
    message = str(caught.value)
    assert "Could not write b.txt: No space left on device" in message
    assert "Part of the patch stays applied: a.txt (updated; not put back: a.txt changed on disk meanwhile" in message
    assert (project / "a.txt").read_bytes() == b"the person's edit\n"  # nothing of theirs overwritten
    assert (project / "b.txt").read_bytes() == b"b\n"


# --- checkpoints and undo --------------------------------------------------------------------------------------


async def test_undo_restores_every_file_a_patch_touched_byte_for_byte(project: Path, tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path / "checkpoints")
    ctx = ToolContext(root=project, data_dir=tmp_path / "data", checkpoints=store)
    store.begin_turn(1)
    await given(ctx, project, {"crlf.txt": b"one\r\ntwo\r\n", "latin.txt": "caf\xe9\n".encode("latin-1"),
                               "src/old.py": b"x = 1\n", "target.py": b"replaced\n", "doomed.txt": b"bye\n"})
    (project / "src" / "old.py").chmod(0o750)
    before = tree(project)
    result = await apply(ctx, patch(
        "*** Update File: crlf.txt", "-two", "+deux", "*** Update File: latin.txt", "-caf\xe9", "+th\xe9",
        "*** Update File: src/old.py", "*** Move to: target.py", "-x = 1", "+x = 2", "*** Delete File: doomed.txt",
        "*** Add File: deep/new/file.txt", "+new"))
    assert result.ok and (project / "crlf.txt").read_bytes() == b"one\r\ndeux\r\n"
    assert (project / "latin.txt").read_bytes() == "th\xe9\n".encode("latin-1")
    store.finish_turn()
    report = UndoManager(store, project).undo_last()
    assert report.ok, report.summary()
    assert tree(project) == before
    assert (project / "src" / "old.py").stat().st_mode & 0o777 == 0o750
    assert not (project / "deep").exists()


# --- what the loop learns from the paths it declares -----------------------------------------------------------


def test_the_snapshot_and_the_stage_know_a_patch_by_its_paths(project: Path) -> None:
    registry = ToolRegistry([ApplyPatchTool()])
    text = patch("*** Add File: new.py", "+x", "*** Update File: README.md", "*** Move to: docs/README.md")
    function = {"name": "apply_patch", "arguments": json.dumps({"input": text})}
    call = {"id": "c1", "type": "function", "function": function}
    messages = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    assert changed_files(messages, registry.written_paths) == ["new.py", "README.md", "docs/README.md"]
    tracker = StageTracker()
    adds = registry.prepare("apply_patch", json.dumps({"input": patch("*** Add File: new.py", "+x")}))
    assert tracker.stage(adds, project) == "creating"
    moves = registry.prepare("apply_patch", function["arguments"])
    assert tracker.stage(moves, project) == "editing"
