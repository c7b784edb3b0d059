"""read_file and write_file on real files in a temporary project."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from anvil.core.tools.base import ToolContext
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import (
    MAX_LINE_CHARS,
    ReadFileArgs,
    ReadFileTool,
    WriteFileArgs,
    WriteFileTool,
    file_tools,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def read(ctx: ToolContext, path: str, **kwargs: int) -> str:
    return (await ReadFileTool().run(ReadFileArgs(path=path, **kwargs), ctx)).output


async def write(ctx: ToolContext, path: str, content: str):
    return await WriteFileTool().run(WriteFileArgs(path=path, content=content), ctx)


# --- read_file ---------------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n_and_records_the_read(ctx, project):
    (project / "app.py").write_text("import os\n\tindented\n")
    output = await read(ctx, "app.py")
    assert output == "     1\timport os\n     2\t\tindented"
    assert ctx.reads[project / "app.py"].size == (project / "app.py").stat().st_size


async def test_read_with_offset_and_limit_says_where_to_continue(ctx, project):
    (project / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    output = await read(ctx, "long.txt", offset=10, limit=5)
    assert output.splitlines()[:5] == [f"{n:>6}\tline {n}" for n in range(10, 15)]
    assert "Lines 10-14 of 100 shown; 86 more. Read on with offset=15." in output


async def test_read_past_the_end_is_an_error_naming_the_valid_range(ctx, project):
    (project / "short.txt").write_text("a\nb\n")
    with pytest.raises(ToolError, match=r"past the end of short.txt, which has 2 lines\. Use an offset from 1 to 2"):
        await read(ctx, "short.txt", offset=5)


async def test_read_cuts_long_lines_with_a_marker(ctx, project):
    (project / "min.js").write_text("x" * 5000 + "\nshort\n")
    first, second = (await read(ctx, "min.js")).splitlines()
    assert first == f"     1\t{'x' * MAX_LINE_CHARS}… [line cut: 5,000 characters in all]"
    assert second == "     2\tshort"


async def test_read_shows_crlf_and_utf16_files_as_plain_lines(ctx, project):
    (project / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    (project / "wide.txt").write_bytes("\ufeffh\u00e9llo\nw\u00f6rld\n".encode("utf-16-le"))
    assert await read(ctx, "win.txt") == "     1\tone\n     2\ttwo"
    assert await read(ctx, "wide.txt") == "     1\th\u00e9llo\n     2\tw\u00f6rld"


async def test_read_keeps_line_numbers_true_to_the_file_with_form_feeds(ctx, project):
    (project / "c.c").write_text("a\x0cb\nnext\n")
    assert await read(ctx, "c.c") == "     1\ta\x0cb\n     2\tnext"


async def test_read_refuses_binary_files(ctx, project):
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match=r"logo.png is a binary file"):
        await read(ctx, "logo.png")
    assert project / "logo.png" not in ctx.reads


async def test_read_of_an_empty_file_says_so(ctx, project):
    (project / "empty.py").write_text("")
    assert await read(ctx, "empty.py") == "empty.py is empty (0 lines)."
    assert project / "empty.py" in ctx.reads


async def test_read_of_a_missing_file_suggests_similar_paths(ctx, project):
    (project / "src").mkdir()
    (project / "src" / "utils.py").write_text("")
    (project / "node_modules").mkdir()
    (project / "node_modules" / "utils.py").write_text("")
    with pytest.raises(ToolError) as caught:
        await read(ctx, "src/utlis.py")
    assert "src/utlis.py does not exist. Did you mean: src/utils.py" in str(caught.value)
    assert "node_modules" not in str(caught.value)


async def test_read_of_a_file_in_the_wrong_directory_suggests_where_it_is(ctx, project):
    (project / "pkg" / "core").mkdir(parents=True)
    (project / "pkg" / "core" / "settings.py").write_text("")
    with pytest.raises(ToolError, match=r"pkg/core/settings.py"):
        await read(ctx, "settings.py")


async def test_read_of_a_directory_points_to_list_files(ctx, project):
    (project / "src").mkdir()
    with pytest.raises(ToolError, match=r"src is a directory.*list_files"):
        await read(ctx, "src")


async def test_read_outside_the_project_is_refused(ctx, project, tmp_path):
    (tmp_path / "secret.txt").write_text("secret")
    with pytest.raises(ToolError, match=r"outside the project"):
        await read(ctx, "../secret.txt")
    with pytest.raises(ToolError, match=r"outside the project"):
        await read(ctx, str(tmp_path / "secret.txt"))


async def test_read_through_a_symlink_pointing_out_of_the_project_is_refused(ctx, project, tmp_path):
    (tmp_path / "secret.txt").write_text("secret")
    (project / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ToolError, match=r"outside the project"):
        await read(ctx, "link.txt")


async def test_read_through_a_symlink_inside_the_project_works(ctx, project):
    (project / "real.txt").write_text("content\n")
    (project / "alias.txt").symlink_to(project / "real.txt")
    assert await read(ctx, "alias.txt") == "     1\tcontent"
    assert project / "real.txt" in ctx.reads


async def test_read_stops_at_the_character_budget_and_says_where_to_continue(ctx, project):
    (project / "wide.txt").write_text(("y" * 1000 + "\n") * 500)
    output = await read(ctx, "wide.txt")
    shown = [line for line in output.splitlines() if "\t" in line]
    assert 90 <= len(shown) < 110
    assert f"Read on with offset={len(shown) + 1}." in output


async def test_read_of_a_huge_file_streams_only_the_requested_lines(ctx, project, monkeypatch):
    monkeypatch.setattr("anvil.core.tools.files.file_tools.STREAM_READ_BYTES", 1000)
    (project / "big.log").write_bytes(b"".join(b"entry %d\r\n" % i for i in range(1, 1001)))
    output = await read(ctx, "big.log", offset=500, limit=2)
    assert output.splitlines()[:2] == ["   500\tentry 500", "   501\tentry 501"]
    assert "the file continues. Read on with offset=502." in output
    with pytest.raises(ToolError, match=r"offset 5000 is past the end of big.log\.$"):
        await read(ctx, "big.log", offset=5000)


# --- write_file --------------------------------------------------------------------------------------


async def test_write_creates_a_file_and_its_parents_with_a_diff_from_dev_null(ctx, project, store):
    result = await write(ctx, "pkg/sub/mod.py", "x = 1\ny = 2\n")
    path = project / "pkg" / "sub" / "mod.py"
    assert path.read_bytes() == b"x = 1\ny = 2\n"
    assert result.diff == "--- /dev/null\n+++ b/pkg/sub/mod.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    assert result.output == "Created pkg/sub/mod.py: 2 lines, 12 bytes."
    assert store.calls == [(path, None, None)]
    assert path in ctx.reads  # a follow-up edit needs no re-read


async def test_overwriting_a_file_that_was_not_read_is_refused(ctx, project, store):
    (project / "app.py").write_text("original\n")
    with pytest.raises(ToolError, match=r"app.py has not been read in this session.*read_file"):
        await write(ctx, "app.py", "new\n")
    assert (project / "app.py").read_text() == "original\n"
    assert store.calls == []


async def test_overwriting_a_file_changed_since_the_read_is_refused(ctx, project, store):
    path = project / "app.py"
    path.write_text("original\n")
    await read(ctx, "app.py")
    path.write_text("changed by someone else\n")
    with pytest.raises(ToolError, match=r"changed on disk since you last read it.*Read it again"):
        await write(ctx, "app.py", "new\n")
    assert path.read_text() == "changed by someone else\n" and store.calls == []


async def test_a_same_size_change_is_caught_by_the_modification_time(ctx, project):
    path = project / "app.py"
    path.write_text("aaaa\n")
    await read(ctx, "app.py")
    stamp = ctx.reads[path]
    path.write_text("bbbb\n")
    os.utime(path, ns=(stamp.mtime_ns + 1_000_000, stamp.mtime_ns + 1_000_000))
    with pytest.raises(ToolError, match=r"changed on disk"):
        await write(ctx, "app.py", "cccc\n")


async def test_overwrite_after_read_checkpoints_the_original_first_and_returns_a_diff(ctx, project, store):
    path = project / "app.py"
    path.write_text("a\nb\nc\n")
    await read(ctx, "app.py")
    result = await write(ctx, "app.py", "a\nB\nc\n")
    assert path.read_text() == "a\nB\nc\n"
    # The store saw the original bytes, and the file still held them when it was called.
    assert store.calls == [(path, b"a\nb\nc\n", b"a\nb\nc\n")]
    assert result.diff is not None and "-b\n+B\n" in result.diff
    assert result.summary == "Updated app.py (+1 -1)" and "-b\n+B" in result.output


async def test_overwrite_keeps_crlf_bom_and_permissions(ctx, project):
    path = project / "run.cmd"
    path.write_bytes(b"\xef\xbb\xbf@echo off\r\necho hi\r\n")
    path.chmod(0o755)
    await read(ctx, "run.cmd")
    await write(ctx, "run.cmd", "@echo off\necho bye\n")
    assert path.read_bytes() == b"\xef\xbb\xbf@echo off\r\necho bye\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


async def test_writing_identical_content_changes_nothing(ctx, project, store):
    path = project / "same.txt"
    path.write_text("same\n")
    await read(ctx, "same.txt")
    result = await write(ctx, "same.txt", "same\n")
    assert "nothing was written" in result.output and store.calls == []


async def test_write_refuses_read_only_files(ctx, project):
    path = project / "locked.txt"
    path.write_text("locked\n")
    path.chmod(0o444)
    await read(ctx, "locked.txt")
    with pytest.raises(ToolError, match=r"read-only"):
        await write(ctx, "locked.txt", "x\n")


async def test_write_refuses_paths_outside_the_project_and_directories(ctx, project, tmp_path):
    with pytest.raises(ToolError, match=r"outside the project"):
        await write(ctx, "../escape.txt", "x")
    assert not (tmp_path / "escape.txt").exists()
    (project / "dir").mkdir()
    with pytest.raises(ToolError, match=r"dir is a directory"):
        await write(ctx, "dir", "x")


async def test_write_refuses_a_character_latin1_cannot_store(ctx, project):
    path = project / "legacy.txt"
    path.write_bytes(b"caf\xe9\n")
    await read(ctx, "legacy.txt")
    with pytest.raises(ToolError, match=r"stored as latin-1.*U\+20AC"):
        await write(ctx, "legacy.txt", "caf\u00e9 5\u20ac\n")
    assert path.read_bytes() == b"caf\xe9\n"


async def test_write_runs_the_configured_linter(ctx, project, tmp_path):
    linter = tmp_path / "lint.py"
    linter.write_text("import sys\nprint(f'{sys.argv[1]}:1: found a problem')\nsys.exit(1)\n")
    ctx.settings.lint = {"python": f"python3 {linter} {{path}}"}
    result = await write(ctx, "new.py", "x = 1\n")
    assert "new.py:1: found a problem" in result.output


def test_tools_describe_themselves_for_the_model():
    read_tool, write_tool = file_tools()
    assert (read_tool.name, write_tool.name) == ("read_file", "write_file")
    assert not read_tool.mutates and write_tool.mutates and (read_tool.kind, write_tool.kind) == ("read", "edit")
    assert read_tool.phase(ReadFileArgs(path="app.py")) == "Reading app.py"
    assert write_tool.phase(WriteFileArgs(path="app.py", content="")) == "Writing app.py"
    schema = read_tool.schema()["function"]["parameters"]
    assert set(schema["properties"]) == {"path", "offset", "limit"} and schema["required"] == ["path"]


async def test_write_preview_is_a_diff_and_writes_nothing(ctx, project):
    from anvil.core.tools.files.file_tools import WriteFileArgs, WriteFileTool

    diff = WriteFileTool().preview(WriteFileArgs(path="new/thing.txt", content="hello\n"), ctx)
    assert diff is not None and "+hello" in diff
    assert not (project / "new").exists()
