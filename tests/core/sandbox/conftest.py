"""A tool context whose commands run in a real bubblewrap sandbox, and helpers to look at host processes."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.core.sandbox.places import Places, SandboxSettings
from anvil.core.sandbox.sandbox import Sandbox
from anvil.core.tools.base import ToolContext, ToolResult, ToolSettings
from anvil.core.tools.shell.processes import shell_session
from anvil.core.tools.shell.shell_tools import RunCommand

# The sandbox is the feature under test: on Linux a missing bubblewrap fails these tests (.ci/run installs it).
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap sandboxes are Linux only")
run_tool = RunCommand()


@pytest.fixture
def places(tmp_path: Path) -> Places:
    root = tmp_path / "project"
    (root / ".anvil").mkdir(parents=True)
    (root / ".anvil" / "config.toml").write_text("model = \"scripted\"\n")
    (root / "README.md").write_text("# demo\n")
    return Places(root, config_dir=tmp_path / "config" / "anvil", data_dir=tmp_path / "data" / "anvil",
                  home=tmp_path / "home")


MakeCtx = Callable[..., ToolContext]


@pytest.fixture
async def make_ctx(places: Places, tmp_path: Path) -> AsyncIterator[MakeCtx]:
    """``make_ctx(**sandbox settings)``: a tool context with its own sandbox; all are closed after the test."""
    made: list[ToolContext] = []

    def make(*, settings: ToolSettings | None = None, environ: dict[str, str] | None = None,
             at: Places | None = None, **sandbox: Any) -> ToolContext:
        where = at or places
        assert shutil.which("bwrap"), "bubblewrap is needed for the sandbox tests: apt-get install bubblewrap"
        box = Sandbox(SandboxSettings(**sandbox), where, session_id=f"t{len(made)}-{os.getpid()}",
                      environ=environ)
        ctx = ToolContext(root=where.root, data_dir=tmp_path / "data" / "anvil", session_id=box.session_id,
                          settings=settings or ToolSettings(), sandbox=box)
        ctx.cleanups.append(box.close)
        shell_session(ctx).kill_grace = 0.3
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        await ctx.close()


async def run(ctx: ToolContext, command: str, **kwargs: Any) -> ToolResult:
    return await run_tool.run(run_tool.Args(command=command, **kwargs), ctx)


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker`` (a unique sleep duration, say)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X") and "bwrap" not in cmdline:
            found.append(int(entry.name))
    return found
