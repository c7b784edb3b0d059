"""Files that change under anvil: changes caught by content, hard links, and how new content reaches the disk."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from anvil.core.tools.base import ToolContext
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files import hard_links, safe_io
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool, WriteFileArgs, WriteFileTool


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def read(ctx: ToolContext, path: str) -> str:
    return (await ReadFileTool().run(ReadFileArgs(path=path), ctx)).output


async def write(ctx: ToolContext, path: str, content: str) -> str:
    return (await WriteFileTool().run(WriteFileArgs(path=path, content=content), ctx)).output


async def edit(ctx: ToolContext, path: str, old: str, new: str) -> str:
    return (await EditFileTool().run(EditFileArgs(path=path, old_string=old, new_string=new), ctx)).output


def change_keeping_size_and_mtime(path: Path, content: str) -> None:
    """What `cp` then `touch -r` does: new content, same size, the old modification time put back."""
    before = path.stat()
    assert len(content.encode()) == before.st_size
    path.write_text(content)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_size == before.st_size


# --- change detection -----------------------------------------------------------------------------------------


async def test_a_change_that_keeps_size_and_mtime_is_caught_before_overwriting(ctx, project, store):
    path = project / "app.py"
    path.write_text("value = 1\n")
    await read(ctx, "app.py")
    change_keeping_size_and_mtime(path, "value = 2\n")
    with pytest.raises(ToolError, match=r"changed on disk since you last read it \(same size and modification "
                                        r"time, but different content"):
        await write(ctx, "app.py", "value = 3\n")
    with pytest.raises(ToolError, match="changed on disk since you last read it"):
        await edit(ctx, "app.py", "value", "total")
    assert path.read_text() == "value = 2\n" and store.calls == []


async def test_a_touched_file_with_the_same_content_can_still_be_changed(ctx, project):
    path = project / "app.py"
    path.write_text("value = 1\n")
    await read(ctx, "app.py")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # a build tool touched it; the model saw this very content
    await edit(ctx, "app.py", "value = 1", "value = 2")
    assert path.read_text() == "value = 2\n"


async def test_a_change_made_while_anvil_writes_is_not_overwritten(ctx, project, monkeypatch):
    path = project / "app.py"
    path.write_text("value = 1\n")
    await read(ctx, "app.py")
    real_write_all = safe_io._write_all

    def someone_edits_meanwhile(fd: int, data: bytes) -> None:
        real_write_all(fd, data)
        path.write_text("value = 9\n")

    monkeypatch.setattr(safe_io, "_write_all", someone_edits_meanwhile)
    with pytest.raises(ToolError, match=r"changed on disk while anvil was writing it\. Nothing was written"):
        await write(ctx, "app.py", "value = 2\n")
    assert path.read_text() == "value = 9\n"
    assert os.listdir(project) == ["app.py"]


# --- hard links -----------------------------------------------------------------------------------------------


async def test_a_hard_link_to_a_file_outside_is_neither_read_nor_edited(ctx, project, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("token = abc\n")
    os.link(outside, project / "innocent.txt")
    with pytest.raises(ToolError, match=r"innocent.txt has 2 hard links \(other names for the same file\), and 1 of "
                       r"them are not in the project, so anvil treats the file as outside the project"):
        await read(ctx, "innocent.txt")
    with pytest.raises(ToolError, match="has 2 hard links"):
        await edit(ctx, "innocent.txt", "abc", "stolen")
    with pytest.raises(ToolError, match="has 2 hard links"):
        await write(ctx, "innocent.txt", "token = stolen\n")
    assert outside.read_text() == "token = abc\n"


async def test_a_link_made_after_the_read_stops_the_write(ctx, project, tmp_path):
    path = project / "app.py"
    path.write_text("value = 1\n")
    await read(ctx, "app.py")
    os.link(path, tmp_path / "elsewhere.py")
    with pytest.raises(ToolError, match="has 2 hard links"):
        await edit(ctx, "app.py", "value = 1", "value = 2")
    assert (tmp_path / "elsewhere.py").read_text() == "value = 1\n"


async def test_a_file_whose_other_names_are_all_in_the_project_is_read_and_edited(ctx, project):
    (project / "docs").mkdir()
    path = project / "app.py"
    path.write_text("value = 1\n")
    os.link(path, project / "docs" / "copy.py")
    assert "value = 1" in await read(ctx, "app.py")
    await edit(ctx, "app.py", "value = 1", "value = 2")
    # replaced by a rename, never rewritten in place: the other name keeps the old content
    assert path.read_text() == "value = 2\n" and path.stat().st_nlink == 1
    assert (project / "docs" / "copy.py").read_text() == "value = 1\n"


async def test_a_file_with_other_names_in_a_project_too_big_to_search_is_refused(ctx, project, monkeypatch):
    monkeypatch.setattr(hard_links, "SEARCH_LIMIT", 10)
    for i in range(20):
        (project / f"f{i:02d}.txt").write_text("x\n")
    (project / "sub").mkdir()  # entered after the 21 entries around it: past the limit
    os.link(project / "f00.txt", project / "sub" / "zz.txt")
    with pytest.raises(ToolError, match=r"f00.txt has 2 hard links .* anvil stopped looking for them in the project "
                                        r"after 10 entries, so it cannot tell whether they are all inside"):
        await read(ctx, "f00.txt")
    monkeypatch.setattr(hard_links, "SEARCH_LIMIT", 100)
    assert "x" in await read(ctx, "f00.txt")


async def test_files_are_replaced_never_rewritten_in_place(ctx, project):
    path = project / "app.py"
    path.write_text("value = 1\n")
    path.chmod(0o751)
    inode = path.stat().st_ino
    handle = path.open("rb")  # a reader that opened the file before the change keeps seeing the old one
    await read(ctx, "app.py")
    await edit(ctx, "app.py", "value = 1", "value = 2")
    assert path.stat().st_ino != inode and stat.S_IMODE(path.stat().st_mode) == 0o751
    assert handle.read() == b"value = 1\n"
    handle.close()
    assert sorted(os.listdir(project)) == ["app.py"]


# --- temporary files ------------------------------------------------------------------------------------------


async def test_the_temporary_file_is_never_more_open_than_the_target(ctx, project, monkeypatch):
    secret = project / ".env"
    secret.write_text("API_KEY=abc\n")
    secret.chmod(0o600)
    await read(ctx, ".env")
    seen: list[int] = []
    real_write_all = safe_io._write_all

    def watching(fd: int, data: bytes) -> None:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_write_all(fd, data)

    monkeypatch.setattr(safe_io, "_write_all", watching)
    old_umask = os.umask(0o022)
    try:
        await write(ctx, ".env", "API_KEY=new\n")
        await write(ctx, "fresh.txt", "hello\n")
    finally:
        os.umask(old_umask)
    assert seen == [0o600, 0o644]  # the secret's copy is the owner's alone; a new file gets the umask's mode
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


async def test_a_failed_write_leaves_the_original_and_no_temporary_file(ctx, project, monkeypatch):
    path = project / "keep.txt"
    path.write_text("original\n")
    await read(ctx, "keep.txt")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safe_io.os, "fsync", disk_full)
    with pytest.raises(ToolError, match=r"Could not write keep\.txt: No space left on device\. The file is unchanged"):
        await write(ctx, "keep.txt", "new\n")
    assert path.read_text() == "original\n"
    assert os.listdir(project) == ["keep.txt"]
    assert not list((ctx.data_dir / "pending-writes").glob("*"))


async def test_a_file_with_a_very_long_name_can_be_changed(ctx, project):
    name = "n" * 250 + ".txt"
    await write(ctx, name, "one\n")
    await edit(ctx, name, "one", "two")
    assert (project / name).read_text() == "two\n"
    assert sorted(os.listdir(project)) == [name]


async def test_a_path_through_a_plain_file_is_reported_missing(ctx, project):
    (project / "notes.txt").write_text("x\n")
    with pytest.raises(ToolError, match=r"notes.txt/inner.txt does not exist"):
        await read(ctx, "notes.txt/inner.txt")
    with pytest.raises(ToolError, match=r"Could not write notes.txt/inner.txt: Not a directory\. The file"):
        await write(ctx, "notes.txt/inner.txt", "y\n")
