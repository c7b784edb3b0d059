"""Faults from outside while the file tools write: a process racing symlinks into the path, and a SIGKILL in the
middle of a large write (the partial file it leaves is the owner's alone, and the next start cleans it up)."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from anvil.config import data_dir, load_settings
from anvil.core.tools.base import ToolContext
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import WriteFileArgs, WriteFileTool
from anvil.core.tools.files.leftovers import clean_leftovers
from anvil.runtime import open_runtime
from tests.conftest import REPO

# Swaps project/d between the real directory and a symlink to the outside one, as fast as it can, until killed:
# atomically with renameat2(RENAME_EXCHANGE) where the kernel has it, else in four steps.
RACER = textwrap.dedent("""
    import ctypes, os, sys
    project, outside = sys.argv[1], sys.argv[2]
    d, swap = os.path.join(project, "d"), os.path.join(project, "d.swap")
    os.symlink(outside, swap)
    libc = ctypes.CDLL(None, use_errno=True)
    exchange = getattr(libc, "renameat2", None)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    if exchange is not None and exchange(AT_FDCWD, d.encode(), AT_FDCWD, swap.encode(), RENAME_EXCHANGE) == 0:
        print("racing", flush=True)
        while True:
            exchange(AT_FDCWD, d.encode(), AT_FDCWD, swap.encode(), RENAME_EXCHANGE)
    os.unlink(swap)
    print("racing", flush=True)
    while True:
        for step in (lambda: os.rename(d, swap), lambda: os.symlink(outside, d), lambda: os.unlink(d),
                     lambda: os.rename(swap, d)):
            try:
                step()
            except OSError:
                pass
""")


async def test_a_racing_symlink_never_gets_a_write_outside_the_project(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "d").mkdir(parents=True)
    outside.mkdir()
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(project), str(outside)], stdout=subprocess.PIPE,
                             text=True)
    written = refused = 0
    try:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "racing"
        for i in range(400):
            try:
                await WriteFileTool().run(WriteFileArgs(path=f"d/f{i}.txt", content=f"file {i}\n"), ctx)
                written += 1
            except ToolError:
                refused += 1
    finally:
        racer.kill()
        racer.wait()
    assert os.listdir(outside) == []  # zero writes outside, of files or of temporary files
    assert written + refused == 400 and written > 0, (written, refused)


# Reads a 0600 file, then overwrites it with ~40 MB; the disk is slow (fsync waits) so the kill lands mid-write.
WRITER = textwrap.dedent("""
    import asyncio, os, sys, time
    from pathlib import Path
    from anvil.core.tools.base import ToolContext
    from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool, WriteFileArgs, WriteFileTool

    def slow_disk(fd):
        print("writing", flush=True)
        time.sleep(60)

    os.fsync = slow_disk
    ctx = ToolContext(root=Path(sys.argv[1]), data_dir=Path(sys.argv[2]))

    async def main():
        await ReadFileTool().run(ReadFileArgs(path=".env"), ctx)
        await WriteFileTool().run(WriteFileArgs(path=".env", content="API_KEY=secret\\n" * 3_000_000), ctx)

    asyncio.run(main())
""")


def _killed_mid_write(project: Path, data: Path) -> None:
    if not (project / ".env").exists():
        (project / ".env").write_text("API_KEY=old\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(project), str(data)], stdout=subprocess.PIPE,
                              text=True, env=env)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
        deadline = time.monotonic() + 30
        while not list(project.glob("*.anvil-tmp")) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()


async def test_a_sigkill_mid_write_leaves_the_file_whole_and_the_next_start_cleans_up(project: Path) -> None:
    secret = project / ".env"
    secret.write_text("API_KEY=old\n")
    secret.chmod(0o600)
    _killed_mid_write(project, data_dir())
    assert secret.read_text() == "API_KEY=old\n"
    [leftover] = list(project.glob("*.anvil-tmp"))
    assert leftover.stat().st_size > 1_000_000
    assert stat.S_IMODE(leftover.stat().st_mode) == 0o600  # never more open than the secret it copies

    runtime = open_runtime(load_settings(project, {"model": "scripted"}, environ={}), project)
    try:
        notices = await runtime.start()
    finally:
        await runtime.close()
    assert not leftover.exists()
    assert any(notice.startswith("Removed 1 partial temporary file an earlier anvil left when it was stopped while "
                                 f"writing: {leftover.name}.") for notice in notices), notices
    assert sorted(os.listdir(project)) == [".env", "README.md"]


async def test_leftovers_of_a_running_anvil_or_not_anvils_are_left_alone(project: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _killed_mid_write(project, data)
    [leftover] = list(project.glob("*.anvil-tmp"))
    other = tmp_path / "other-project"
    other.mkdir()
    assert clean_leftovers(data, other) == []  # another project's start does not touch it
    leftover.unlink()
    leftover.symlink_to(project / "README.md")  # something else now has that name: reported, not deleted
    [notice] = await asyncio.to_thread(clean_leftovers, data, project)
    assert f"temporary file at {leftover} (not a regular file); it was left alone" in notice
    assert leftover.is_symlink() and (project / "README.md").exists()
    assert clean_leftovers(data, project) == []  # reported once
