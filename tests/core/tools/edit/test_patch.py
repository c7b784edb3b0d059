"""apply_patch on real files: a table of patches over every construct of the format, then the refusals (all or
nothing across files), checkpoints and undo, approvals, and which models are offered it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.session.checkpoints import FileCheckpointStore
from anvil.core.session.undo import UndoManager
from anvil.core.tools.base import ToolContext, ToolRegistry, ToolResult
from anvil.core.tools.edit.patch_tool import ApplyPatchArgs, ApplyPatchTool
from anvil.core.tools.edit.styles import edit_tools_for, offer_edit_tools
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files import changes
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool
from anvil.core.tools.files.safe_io import Location


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


async def apply(ctx: ToolContext, text: str) -> ToolResult:
    return await ApplyPatchTool().run(ApplyPatchArgs(input=text), ctx)


async def given(ctx: ToolContext, project: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_bytes(data)
        await ReadFileTool().run(ReadFileArgs(path=name), ctx)


def tree(project: Path) -> dict[str, bytes]:
    return {p.relative_to(project).as_posix(): p.read_bytes() for p in sorted(project.rglob("*")) if p.is_file()}


CLASSES = (b"class A:\n    def run(self):\n        return 1\n\n"
           b"class B:\n    def run(self):\n        return 1\n")


@dataclass
class Case:
    before: dict[str, bytes]
    patch: str
    after: dict[str, bytes]
    output: list[str] = field(default_factory=list)


CASES = {
    "add a file in a new directory": Case(
        {}, patch("*** Add File: pkg/sub/new.py", "+def f():", "+    return 1"),
        {"pkg/sub/new.py": b"def f():\n    return 1\n"}, ["pkg/sub/new.py added"]),
    "delete a file": Case(
        {"old.txt": b"bye\n", "keep.txt": b"stay\n"}, patch("*** Delete File: old.txt"),
        {"keep.txt": b"stay\n"}, ["old.txt deleted"]),
    "move a file and change it": Case(
        {"app.py": b"def greet():\n    print('Hi')\n"},
        patch("*** Update File: app.py", "*** Move to: src/main.py", "@@ def greet():", "-    print('Hi')",
              "+    print('Hello')"),
        {"src/main.py": b"def greet():\n    print('Hello')\n"}, ["src/main.py moved from app.py"]),
    "rename without changes": Case(
        {"a.txt": b"same\n"}, patch("*** Update File: a.txt", "*** Move to: b.txt"), {"b.txt": b"same\n"}),
    "several hunks in one file": Case(
        {"f.py": b"a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\n"},
        patch("*** Update File: f.py", "@@", " a = 1", "-b = 2", "+b = 20", " c = 3", "@@", " f = 6", "-g = 7",
              "+g = 70", " h = 8"),
        {"f.py": b"a = 1\nb = 20\nc = 3\nd = 4\ne = 5\nf = 6\ng = 70\nh = 8\n"}, ["2 hunks: exact"]),
    "several files in one patch": Case(
        {"a.txt": b"one\n", "b.txt": b"two\n"},
        patch("*** Update File: a.txt", "-one", "+ONE", "*** Update File: b.txt", "@@", "-two", "+TWO",
              "*** Add File: c.txt", "+three"),
        {"a.txt": b"ONE\n", "b.txt": b"TWO\n", "c.txt": b"three\n"}, ["Applied the patch to 3 files"]),
    "@@ class line picks the class": Case(
        {"m.py": CLASSES},
        patch("*** Update File: m.py", "@@ class B:", "     def run(self):", "-        return 1", "+        return 2"),
        {"m.py": CLASSES[:-2] + b"2\n"}),
    "@@ class then def lines narrow step by step": Case(
        {"m.py": CLASSES},
        patch("*** Update File: m.py", "@@ class A:", "@@     def run(self):", "-        return 1",
              "+        return 0"),
        {"m.py": CLASSES.replace(b"return 1", b"return 0", 1)}),
    "@@ line that starts the file's line": Case(
        {"m.py": b"class Base:\n    x = 1\nclass Child(Base):\n    x = 1\n"},
        patch("*** Update File: m.py", "@@ class Child", "-    x = 1", "+    x = 2"),
        {"m.py": b"class Base:\n    x = 1\nclass Child(Base):\n    x = 2\n"}),
    "a repeated @@ line is fine when the hunk fits under one": Case(
        {"m.py": b"def run():\n    a()\n\ndef run():\n    b()\n"},
        patch("*** Update File: m.py", "@@ def run():", "-    b()", "+    c()"),
        {"m.py": b"def run():\n    a()\n\ndef run():\n    c()\n"}),
    "only + lines after an @@ line go right after it": Case(
        {"m.py": b"class A:\n    x = 1\n"},
        patch("*** Update File: m.py", "@@ class A:", '+    """A class."""'),
        {"m.py": b'class A:\n    """A class."""\n    x = 1\n'}),
    "only + lines without @@ line go at the end": Case(
        {"m.txt": b"a\nb\n"}, patch("*** Update File: m.txt", "@@", "+c", "*** End of File"),
        {"m.txt": b"a\nb\nc\n"}, ["insert"]),
    "end of file picks the last of two equal blocks": Case(
        {"t.txt": b"end\nx\nend\n"}, patch("*** Update File: t.txt", "@@", "-end", "+END", "*** End of File"),
        {"t.txt": b"end\nx\nEND\n"}),
    "a CRLF file stays CRLF": Case(
        {"w.txt": b"one\r\ntwo\r\nthree\r\n"}, patch("*** Update File: w.txt", " one", "-two", "+2", " three"),
        {"w.txt": b"one\r\n2\r\nthree\r\n"}),
    "a file without a final newline keeps none": Case(
        {"n.txt": b"a\nb"}, patch("*** Update File: n.txt", " a", "-b", "+c"), {"n.txt": b"a\nc"}),
    "tabs in the file, spaces in the patch": Case(
        {"g.go": b"func f() {\n\tif ok {\n\t\treturn\n\t}\n}\n"},
        patch("*** Update File: g.go", "     if ok {", "-        return", "+        cleanup()", "+        return",
              "     }"),
        {"g.go": b"func f() {\n\tif ok {\n\t\tcleanup()\n\t\treturn\n\t}\n}\n"}, ["indentation"]),
    "trailing blanks and curly quotes in the file": Case(
        {"q.py": "x = 1   \nmsg = “hi”\ny = 2\n".encode()},
        patch("*** Update File: q.py", " x = 1", "-msg = \"hi\"", "+msg = \"hello\"", " y = 2"),
        {"q.py": "x = 1   \nmsg = “hello”\ny = 2\n".encode()}, ["typography"]),
    "blank separator lines between file sections": Case(
        {"a.txt": b"x\ny\n"}, patch("*** Update File: a.txt", " x", "-y", "+z", "", "*** Add File: b.txt", "+b", ""),
        {"a.txt": b"x\nz\n", "b.txt": b"b\n"}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_patches_apply(case: Case, ctx: ToolContext, project: Path):
    await given(ctx, project, case.before)
    result = await apply(ctx, case.patch)
    assert tree(project) == case.after
    for text in case.output:
        assert text in result.output
    assert result.diff and result.diff in result.output


async def test_the_diff_shows_every_file_added_moved_updated_and_deleted(ctx, project):
    await given(ctx, project, {"app.py": b"def greet():\n    print('Hi')\n", "old.txt": b"bye\n"})
    result = await apply(ctx, patch("*** Add File: hello.txt", "+Hello world", "*** Update File: app.py",
                                    "*** Move to: src/main.py", "@@ def greet():", "-    print('Hi')",
                                    "+    print('Hello')", "*** Delete File: old.txt"))
    assert result.diff == (
        "diff --git a/hello.txt b/hello.txt\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+Hello world\n"
        "diff --git a/app.py b/src/main.py\n--- a/app.py\n+++ b/src/main.py\n@@ -1,2 +1,2 @@\n def greet():\n"
        "-    print('Hi')\n+    print('Hello')\n"
        "diff --git a/old.txt b/old.txt\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert result.summary == "Patched 3 files (+2 -2)"
    assert result.data is not None and result.data["files"] == [
        {"path": "hello.txt", "action": "added"}, {"path": "src/main.py", "action": "moved"},
        {"path": "old.txt", "action": "deleted"}]


# --- refusals: nothing is changed ----------------------------------------------------------------------

TWICE = b"def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x\n"


@pytest.mark.parametrize(("before", "text", "expected"), [
    ({"t.py": TWICE}, patch("*** Update File: t.py", "     x = 1", "-    return x", "+    return x + 1"),
     ["'*** Update File: t.py' (patch line 7): hunk 1 (patch line 8)", "match 2 places", "lines 2-3, 6-7"]),
    ({"t.py": TWICE}, patch("*** Update File: t.py", "@@ def c():", "-    x = 1", "+    x = 2"),
     ["the @@ line 'def c():' was not found"]),
    ({"t.py": TWICE}, patch("*** Update File: t.py", "@@ def b():", "     x = 1", "-    return y", "+    return z"),
     ["hunk 1", "were not found", "Closest region, lines 6-7", "     7\t    return x"]),
    ({"t.py": b"a\nb\nc\n"}, patch("*** Update File: t.py", "@@", "-c", "+C", "@@", "-a", "+A"),
     ["hunk 2", "not found after line 3", "hunks must come in the order of the file"]),
    ({"t.py": TWICE}, patch("*** Update File: t.py", "@@ def b():", "-    x = 1", "-    return x", "+    x = 2",
                            "+    # ... existing code ..."),
     ["line 2 of its new text", "(`# ... existing code ...`) looks like a placeholder"]),
    ({}, patch("*** Update File: missing.py", "-a", "+b"), ["missing.py does not exist", "*** Add File: missing.py"]),
    ({}, patch("*** Delete File: missing.py"), ["missing.py does not exist, so it cannot be deleted"]),
    ({}, patch("*** Add File: ../outside.txt", "+x"), ["outside the project"]),
    ({"a.txt": b"a\n"}, patch("*** Update File: a.txt", "-a", "+a"), ["its - lines and + lines are the same"]),
    ({}, "*** Begin Patch\n*** Add File: x\n+x\n", ["The patch could not be read", "*** End Patch"]),
])
async def test_a_refused_patch_changes_no_file_and_says_why(before, text, expected, ctx, project, store):
    await given(ctx, project, {**before, "other.txt": b"untouched\n"})
    # A valid first operation: it must not be applied either, since the patch is all or nothing.
    text = text.replace("*** Begin Patch\n", "*** Begin Patch\n*** Add File: first.txt\n+first\n"
                        "*** Update File: other.txt\n-untouched\n+touched\n", 1)
    snapshot = tree(project)
    with pytest.raises(ToolError) as caught:
        await apply(ctx, text)
    for piece in expected:
        assert piece in str(caught.value)
    assert tree(project) == snapshot and store.calls == []


async def test_a_patch_that_changes_nothing_is_an_error(ctx, project, store):
    await given(ctx, project, {"a.txt": b"a\n"})
    with pytest.raises(ToolError, match="would not change any file"):
        await apply(ctx, patch("*** Add File: a.txt", "+a"))
    assert store.calls == []


async def test_files_not_read_this_session_are_not_updated_deleted_or_replaced(ctx, project):
    for name in ("a.txt", "b.txt", "c.txt"):
        (project / name).write_text("unseen\n")
    for text, action in [(patch("*** Update File: a.txt", "-unseen", "+seen"), "edited"),
                         (patch("*** Delete File: b.txt"), "deleted"),
                         (patch("*** Add File: c.txt", "+new"), "overwritten")]:
        with pytest.raises(ToolError, match=f"cannot be {action} yet"):
            await apply(ctx, text)
    assert all((project / name).read_text() == "unseen\n" for name in ("a.txt", "b.txt", "c.txt"))


async def test_a_failed_write_puts_back_the_files_already_written(ctx, project, monkeypatch):
    await given(ctx, project, {"a.txt": b"a\n", "b.txt": b"b\n"})
    real_write = changes.replace_file

    def failing(location: Location, data: bytes, *args: Any) -> os.stat_result:
        if location.name == "b.txt" and data != b"b\n":
            raise OSError(28, "No space left on device")
        return real_write(location, data, *args)

    monkeypatch.setattr(changes, "replace_file", failing)
    with pytest.raises(ToolError, match=r"No space left on device.*put back"):
        await apply(ctx, patch("*** Update File: a.txt", "-a", "+A", "*** Add File: new.txt", "+n",
                               "*** Update File: b.txt", "-b", "+B"))
    assert tree(project) == {"a.txt": b"a\n", "b.txt": b"b\n"}


# --- checkpoints, undo, approvals ----------------------------------------------------------------------


async def test_every_file_is_checkpointed_and_undo_restores_them_all(project, tmp_path):
    store = FileCheckpointStore(tmp_path / "checkpoints")
    ctx = ToolContext(root=project, data_dir=tmp_path / "data", checkpoints=store)
    store.begin_turn(1)
    await given(ctx, project, {"app.py": b"x = 1\n", "old.txt": b"bye\n"})
    before = tree(project)
    await apply(ctx, patch("*** Add File: new/n.txt", "+n", "*** Update File: app.py", "*** Move to: main.py",
                           "-x = 1", "+x = 2", "*** Delete File: old.txt"))
    assert tree(project) == {"main.py": b"x = 2\n", "new/n.txt": b"n\n"}
    store.finish_turn()
    report = UndoManager(store, project).undo_last()
    assert report.ok, report.summary()
    assert tree(project) == before and not (project / "new").exists()


def test_apply_patch_asks_like_an_edit_and_is_refused_in_plan_mode(ctx):
    tool, args = ApplyPatchTool(), ApplyPatchArgs(input=patch("*** Delete File: a.txt"))
    assert ApprovalPolicy(ask_edits=True).evaluate(tool, args, ctx).action == "ask"
    assert ApprovalPolicy(ask_edits=False).evaluate(tool, args, ctx).action == "allow"
    assert ApprovalPolicy(mode="plan").evaluate(tool, args, ctx).action == "deny"


async def test_the_approval_preview_is_the_diff_and_nothing_is_written(ctx, project):
    await given(ctx, project, {"a.txt": b"a\n"})
    preview = ApplyPatchTool().preview(ApplyPatchArgs(input=patch("*** Update File: a.txt", "-a", "+b")), ctx)
    assert preview is not None and "-a\n+b\n" in preview
    assert (project / "a.txt").read_bytes() == b"a\n"
    assert ApplyPatchTool().preview(ApplyPatchArgs(input="not a patch"), ctx) is None


# --- which models get which edit tools -----------------------------------------------------------------


@pytest.mark.parametrize(("model", "expected"), [
    ("openai/gpt-5", ("apply_patch",)), ("gpt-5-mini", ("apply_patch",)), ("openai/gpt-5.1-codex", ("apply_patch",)),
    ("openrouter/openai/gpt-5", ("apply_patch",)), ("codex-mini-latest", ("apply_patch",)),
    ("anthropic/claude-sonnet-4-5", ("edit_file", "multi_edit")), ("openai/gpt-4.1", ("edit_file", "multi_edit")),
    ("ollama/qwen3", ("edit_file", "multi_edit")), ("scripted", ("edit_file", "multi_edit")),
])
def test_auto_offers_apply_patch_to_gpt5_and_codex_models_only(model, expected):
    assert tuple(tool.name for tool in edit_tools_for("auto", model)) == expected


def test_the_setting_overrides_the_model_and_the_registry_follows_it():
    registry = ToolRegistry()
    offer_edit_tools(registry, "both", "anthropic/claude")
    assert registry.names() == ["edit_file", "multi_edit", "apply_patch"]
    offer_edit_tools(registry, "auto", "openai/gpt-5")
    assert registry.names() == ["apply_patch"]
    offer_edit_tools(registry, "replace", "openai/gpt-5")
    assert registry.names() == ["edit_file", "multi_edit"]


async def test_an_end_of_file_hunk_only_matches_at_the_end_even_under_an_anchor(ctx, project):
    await given(ctx, project, {"e.py": b"def f():\n    x = 1\n\ny = 2\n"})
    with pytest.raises(ToolError, match="were not found"):
        await apply(ctx, patch("*** Update File: e.py", "@@ def f():", "-    x = 1", "+    x = 3", "*** End of File"))
    await apply(ctx, patch("*** Update File: e.py", "@@ def f():", " ", "-y = 2", "+y = 3", "*** End of File"))
    assert (project / "e.py").read_bytes() == b"def f():\n    x = 1\n\ny = 3\n"
