"""edit_file and multi_edit on real files: formats kept, safeguards, atomicity, checkpoints, the linter."""

from __future__ import annotations

import asyncio
import hashlib
import stat
import sys
from pathlib import Path

import pytest

from anvil.core.tools.base import ToolContext, ToolResult
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool, MultiEditArgs, MultiEditTool, edit_tools
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.changes import DIFF_OUTPUT_CHARS
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool
from anvil.core.tools.files.lint import lint_command_for


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def read(ctx: ToolContext, path: str) -> None:
    await ReadFileTool().run(ReadFileArgs(path=path), ctx)


async def edit(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False) -> ToolResult:
    args = EditFileArgs(path=path, old_string=old, new_string=new, replace_all=replace_all)
    return await EditFileTool().run(args, ctx)


async def multi(ctx: ToolContext, path: str, *edits: tuple[str, str]) -> ToolResult:
    args = MultiEditArgs.model_validate({"path": path, "edits": [{"old_string": o, "new_string": n}
                                                                 for o, n in edits]})
    return await MultiEditTool().run(args, ctx)


async def prepared(ctx: ToolContext, project: Path, name: str, data: bytes) -> Path:
    path = project / name
    path.write_bytes(data)
    await read(ctx, name)
    return path


# --- edit_file ---------------------------------------------------------------------------------------


async def test_edit_replaces_the_match_and_returns_a_diff(ctx, project):
    path = await prepared(ctx, project, "app.py", b"def f():\n    return 1\n")
    result = await edit(ctx, "app.py", "return 1", "return 2")
    assert path.read_bytes() == b"def f():\n    return 2\n"
    assert result.diff == "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
    assert result.output.startswith("Edited app.py: 1 replacement at line 2, exact match.")
    assert result.diff in result.output
    assert result.summary == "Edited app.py (+1 -1)" and result.data is not None
    assert result.data["steps"] == ["exact"]


async def test_edit_needs_a_prior_read(ctx, project, store):
    (project / "app.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match=r"app.py has not been read in this session.*read_file"):
        await edit(ctx, "app.py", "x = 1", "x = 2")
    assert (project / "app.py").read_text() == "x = 1\n" and store.calls == []


async def test_edit_refuses_a_file_changed_on_disk_since_the_read(ctx, project, store):
    path = await prepared(ctx, project, "app.py", b"x = 1\n")
    path.write_text("x = 1\ny = 2\n")
    with pytest.raises(ToolError, match=r"changed on disk since you last read it"):
        await edit(ctx, "app.py", "x = 1", "x = 2")
    assert path.read_text() == "x = 1\ny = 2\n" and store.calls == []


async def test_edit_of_a_missing_file_points_to_write_file(ctx):
    with pytest.raises(ToolError, match=r"new.py does not exist.*write_file"):
        await edit(ctx, "new.py", "a", "b")


async def test_consecutive_edits_need_no_re_read(ctx, project):
    path = await prepared(ctx, project, "app.py", b"a = 1\nb = 2\n")
    await edit(ctx, "app.py", "a = 1", "a = 10")
    await edit(ctx, "app.py", "b = 2", "b = 20")
    assert path.read_text() == "a = 10\nb = 20\n"


async def test_edit_checkpoints_the_original_before_writing(ctx, project, store):
    path = await prepared(ctx, project, "app.py", b"before\n")
    await edit(ctx, "app.py", "before", "after")
    assert store.calls == [(path, b"before\n", b"before\n")]


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        (b"one\r\ntwo\r\nthree\r\n", b"one\r\nTWO\r\nextra\r\nthree\r\n"),
        (b"\xef\xbb\xbfone\ntwo\nthree", b"\xef\xbb\xbfone\nTWO\nextra\nthree"),
        ("\ufeffone\r\ntwo\r\nthree\r\n".encode("utf-16-le"),
         "\ufeffone\r\nTWO\r\nextra\r\nthree\r\n".encode("utf-16-le")),
        ("\ufeffone\ntwo\nthree".encode("utf-16-be"), "\ufeffone\nTWO\nextra\nthree".encode("utf-16-be")),
        (b"one\rtwo\rthree\r", b"one\rTWO\rextra\rthree\r"),
        (b"caf\xe9 one\ntwo\nthree\n", b"caf\xe9 one\nTWO\nextra\nthree\n"),
    ],
    ids=["crlf", "utf8-bom-no-final-newline", "utf16le-crlf", "utf16be-no-final-newline", "cr", "latin1"],
)
async def test_edit_keeps_encoding_bom_line_endings_and_final_newline(ctx, project, original, expected):
    path = await prepared(ctx, project, "f.txt", original)
    await edit(ctx, "f.txt", "two\n", "TWO\nextra\n")
    assert path.read_bytes() == expected


async def test_edit_on_the_last_line_without_final_newline_keeps_it_that_way(ctx, project):
    path = await prepared(ctx, project, "f.txt", b"first\nlast")
    await edit(ctx, "f.txt", "last", "LAST")
    assert path.read_bytes() == b"first\nLAST"


async def test_edit_keeps_tabs_when_old_string_used_spaces(ctx, project):
    path = await prepared(ctx, project, "main.go", b"func main() {\n\tif ok {\n\t\treturn\n\t}\n}\n")
    result = await edit(ctx, "main.go", "if ok {\n    return\n}", "if ok {\n    log()\n    return\n}")
    assert path.read_bytes() == b"func main() {\n\tif ok {\n\t\tlog()\n\t\treturn\n\t}\n}\n"
    assert "ignoring indentation" in result.output


async def test_edit_keeps_permission_bits(ctx, project):
    path = await prepared(ctx, project, "run.sh", b"#!/bin/sh\necho hi\n")
    path.chmod(0o754)
    await read(ctx, "run.sh")  # chmod changes no stamp, but be explicit
    await edit(ctx, "run.sh", "echo hi", "echo bye")
    assert stat.S_IMODE(path.stat().st_mode) == 0o754


async def test_edit_handles_unicode_text(ctx, project):
    path = await prepared(ctx, project, "i18n.py", "greeting = 'こんにちは'\nemoji = '🎉'\n".encode())
    await edit(ctx, "i18n.py", "'🎉'", "'🚀 ✓'")
    assert path.read_text(encoding="utf-8") == "greeting = 'こんにちは'\nemoji = '🚀 ✓'\n"


async def test_ambiguous_edit_names_the_lines_and_leaves_the_file(ctx, project, store):
    path = await prepared(ctx, project, "f.py", b"x = 1\ny = 2\nx = 1\n")
    with pytest.raises(ToolError, match=r"matches 2 places, at line\(s\) 1, 3.*replace_all"):
        await edit(ctx, "f.py", "x = 1", "x = 0")
    assert path.read_bytes() == b"x = 1\ny = 2\nx = 1\n" and store.calls == []


async def test_replace_all_edits_every_occurrence(ctx, project):
    path = await prepared(ctx, project, "f.py", b"x = 1\ny = 2\nx = 1\n")
    result = await edit(ctx, "f.py", "x = 1", "x = 0", replace_all=True)
    assert path.read_bytes() == b"x = 0\ny = 2\nx = 0\n"
    assert "2 replacements at lines 1, 3" in result.output


async def test_a_failed_edit_shows_the_closest_region_with_line_numbers(ctx, project):
    lines = "".join(f"def handler_{n}(request):\n    return render(request, '{n}.html')\n\n"
                    for n in ("home", "about", "contact"))
    path = await prepared(ctx, project, "views.py", lines.encode())
    with pytest.raises(ToolError) as caught:
        await edit(ctx, "views.py", "def handler_about(req):\n    return render(req, 'abt.html')", "x")
    message = str(caught.value)
    assert message.startswith("Could not edit views.py: old_string was not found")
    assert "Closest region, lines 4-5 (similarity 0." in message
    assert "     4\tdef handler_about(request):\n     5\t    return render(request, 'about.html')" in message
    assert path.read_text() == lines


async def test_a_fuzzy_edit_says_so_and_asks_to_check_the_diff(ctx, project):
    text = "start()\nprepare(config)\nrun(config, fast=True)\nfinish()\n"
    path = await prepared(ctx, project, "job.py", text.encode())
    result = await edit(ctx, "job.py", "prepare(config)\nrun(confg, fast=True)\nfinish()",
                        "prepare(config)\nrun(config, fast=False)\nfinish()")
    assert path.read_text() == "start()\nprepare(config)\nrun(config, fast=False)\nfinish()\n"
    assert "fuzzy match (similarity 0.9" in result.output and "check the diff" in result.output


async def test_edit_refuses_binary_files_and_symlinks_out_of_the_project(ctx, project, tmp_path):
    (tmp_path / "outside.txt").write_text("x = 1\n")
    (project / "link.txt").symlink_to(tmp_path / "outside.txt")
    with pytest.raises(ToolError, match=r"outside the project"):
        await edit(ctx, "link.txt", "x = 1", "x = 2")
    assert (tmp_path / "outside.txt").read_text() == "x = 1\n"
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    blob = project / "blob.bin"
    ctx.record_read(blob, blob.stat(), hashlib.sha256(blob.read_bytes()).hexdigest())  # as if read some other way
    with pytest.raises(ToolError, match=r"blob.bin is a binary file"):
        await edit(ctx, "blob.bin", "a", "b")


async def test_edit_refuses_a_character_the_files_encoding_cannot_store(ctx, project, store):
    path = await prepared(ctx, project, "legacy.txt", b"price: 5 EUR\n")
    path.write_bytes(b"price: 5 EUR \xe9\n")
    await read(ctx, "legacy.txt")
    with pytest.raises(ToolError, match=r"stored as latin-1.*The file is unchanged"):
        await edit(ctx, "legacy.txt", "5 EUR", "5\u20ac")
    assert path.read_bytes() == b"price: 5 EUR \xe9\n" and store.calls == []


async def test_edit_on_a_ten_megabyte_file(ctx, project):
    body = "".join(f"    value_{i} = compute({i})  # padding to make the file large\r\n" for i in range(180_000))
    path = await prepared(ctx, project, "big.py", body.encode())
    assert path.stat().st_size > 10_000_000
    result = await edit(ctx, "big.py", "value_123456 = compute(123456)", "value_123456 = compute(-1)")
    data = path.read_bytes()
    assert data == body.replace("compute(123456)", "compute(-1)").encode()
    assert result.diff is not None and "@@ -123454,7 +123454,7 @@" in result.diff


async def test_a_huge_diff_is_cut_in_the_output_but_kept_whole_for_the_front_end(ctx, project):
    path = await prepared(ctx, project, "data.txt", "".join(f"row {i}\n" for i in range(5000)).encode())
    result = await edit(ctx, "data.txt", "row", "ROW", replace_all=True)
    assert path.read_text().count("ROW") == 5000
    assert result.diff is not None and len(result.diff) > DIFF_OUTPUT_CHARS
    assert len(result.output) < DIFF_OUTPUT_CHARS + 500 and "diff cut here" in result.output


async def test_concurrent_edits_of_one_file_all_land(ctx, project):
    path = await prepared(ctx, project, "f.py", "".join(f"v{i} = {i}\n" for i in range(20)).encode())
    await asyncio.gather(*(edit(ctx, "f.py", f"v{i} = {i}\n", f"v{i} = -{i}\n") for i in range(20)))
    assert path.read_text() == "".join(f"v{i} = -{i}\n" for i in range(20))


# --- multi_edit --------------------------------------------------------------------------------------


async def test_multi_edit_applies_edits_in_order_each_seeing_the_previous(ctx, project, store):
    path = await prepared(ctx, project, "f.py", b"alpha\nbeta\ngamma\n")
    result = await multi(ctx, "f.py", ("alpha", "ALPHA"), ("ALPHA\nbeta", "AB"), ("gamma", "G"))
    assert path.read_bytes() == b"AB\nG\n"
    assert result.output.startswith("Applied 3 edits to f.py (edits[0]: 1 replacement at line 1")
    assert len(store.calls) == 1  # one checkpoint for the whole change


async def test_multi_edit_is_all_or_nothing_and_names_the_failing_edit(ctx, project, store):
    path = await prepared(ctx, project, "f.py", b"alpha\nbeta\ngamma\n")
    with pytest.raises(ToolError) as caught:
        await multi(ctx, "f.py", ("alpha", "ALPHA"), ("beta", "BETA"), ("delta", "DELTA"))
    message = str(caught.value)
    assert "failed at edits[2] (edit 3 of 3)" in message and "the file is unchanged" in message
    assert "as edits[0]..edits[1] would leave it" in message
    assert path.read_bytes() == b"alpha\nbeta\ngamma\n" and store.calls == []


async def test_multi_edit_needs_at_least_one_edit():
    with pytest.raises(ValueError, match=r"at least 1"):
        MultiEditArgs.model_validate({"path": "f.py", "edits": []})


# --- the lint hook -----------------------------------------------------------------------------------


def _linter(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake_linter.py"
    script.write_text("import sys, time\n" + body)
    return f"{sys.executable} {script} {{path}}"


async def test_lint_findings_are_appended_to_the_edit_result(ctx, project, tmp_path):
    ctx.settings.lint = {".py": _linter(tmp_path, "print(f'{sys.argv[1]}:1:1: E999 bad thing')\nsys.exit(1)\n")}
    await prepared(ctx, project, "app.py", b"x = 1\n")
    result = await edit(ctx, "app.py", "x = 1", "x = (")
    assert result.output.rstrip().endswith("(exit 1):\napp.py:1:1: E999 bad thing")
    assert result.data is not None and "E999" in result.data["lint"]


async def test_a_clean_lint_adds_nothing_and_unknown_extensions_are_not_linted(ctx, project, tmp_path):
    ctx.settings.lint = {"python": _linter(tmp_path, "sys.exit(0)\n")}
    await prepared(ctx, project, "app.py", b"x = 1\n")
    result = await edit(ctx, "app.py", "x = 1", "x = 2")
    assert "Linter" not in result.output
    assert lint_command_for(project / "notes.txt", ctx.settings.lint) is None


async def test_a_missing_linter_binary_is_skipped_quietly(ctx, project):
    ctx.settings.lint = {"python": "definitely-not-a-linter-binary-xyz {path}"}
    path = await prepared(ctx, project, "app.py", b"x = 1\n")
    result = await edit(ctx, "app.py", "x = 1", "x = 2")
    assert path.read_text() == "x = 2\n" and "lint" not in result.output.lower()


async def test_a_slow_linter_times_out_briefly(ctx, project, tmp_path):
    ctx.settings.lint = {"py": _linter(tmp_path, "time.sleep(30)\n")}
    ctx.settings.lint_timeout = 0.5
    await prepared(ctx, project, "app.py", b"x = 1\n")
    result = await edit(ctx, "app.py", "x = 1", "x = 2")
    assert "did not finish within 0.5s" in result.output


def test_edit_tools_describe_themselves_for_the_model():
    edit_tool, multi_tool = edit_tools()
    assert (edit_tool.name, multi_tool.name) == ("edit_file", "multi_edit")
    assert edit_tool.mutates and multi_tool.mutates and edit_tool.approval == multi_tool.approval == "edit"
    assert edit_tool.phase(EditFileArgs(path="app.py", old_string="a", new_string="b")) == "Editing app.py"
    params = multi_tool.schema()["function"]["parameters"]
    assert params["required"] == ["path", "edits"]


async def test_preview_shows_the_diff_without_changing_anything(ctx, project, store):
    path = await prepared(ctx, project, "p.py", b"a = 1\nb = 2\n")
    diff = EditFileTool().preview(EditFileArgs(path="p.py", old_string="b = 2", new_string="b = 3"), ctx)
    assert diff is not None and "-b = 2" in diff and "+b = 3" in diff
    multi_diff = MultiEditTool().preview(MultiEditArgs.model_validate(
        {"path": "p.py", "edits": [{"old_string": "a = 1", "new_string": "a = 0"}]}), ctx)
    assert multi_diff is not None and "+a = 0" in multi_diff
    assert path.read_bytes() == b"a = 1\nb = 2\n" and store.calls == []
    # An edit that would fail has no preview; running it reports why.
    assert EditFileTool().preview(EditFileArgs(path="p.py", old_string="zzz", new_string="y"), ctx) is None
