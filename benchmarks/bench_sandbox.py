"""The OS sandbox's cost per command: run_command's machinery with and without bubblewrap, in the same run.

Both sides go through the shell session anvil uses (``ShellSession.run``: the pwd trap, the log, the capture),
alternating, on the same small project: ``true`` (the sandbox's fixed cost) and ``ls -R`` of the project (a
command that touches files). The ratio judged is the median of per-pair ratios (each pair back to back). Also
shown: the ``/proc`` scan that finds what an unsandboxed command left running (run at a timeout, kill_command
and the end of a session, never on a command's normal path).

    python benchmarks/bench_sandbox.py
    python benchmarks/bench_sandbox.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from anvil.core.sandbox.lifetime import tagged_pids
from anvil.core.sandbox.places import Places, SandboxSettings
from anvil.core.sandbox.sandbox import Sandbox
from anvil.core.tools.base import ToolContext
from anvil.core.tools.shell.processes import ShellSession


async def _time(session: ShellSession, command: str) -> float:
    start = time.perf_counter()
    run = await session.run(command, 60)
    elapsed = time.perf_counter() - start
    assert run.exit_code == 0, run.output
    return elapsed


def _context(root: Path, data: Path, mode: str) -> ToolContext:
    box = Sandbox(SandboxSettings(mode=mode), Places(root, data_dir=data), session_id=f"bench-{mode}")  # type: ignore[arg-type]
    return ToolContext(root=root, data_dir=data, session_id=box.session_id, sandbox=box)


async def main(repeats: int) -> int:
    if not sys.platform.startswith("linux") or shutil.which("bwrap") is None:
        print("bench_sandbox: needs Linux and bubblewrap (bwrap); skipped")
        return 0
    with tempfile.TemporaryDirectory(prefix="anvil-bench-sandbox-") as tmp:
        root = Path(tmp) / "project"
        for i in range(50):
            (root / f"pkg{i % 5}").mkdir(parents=True, exist_ok=True)
            (root / f"pkg{i % 5}" / f"mod{i}.py").write_text("x = 1\n")
        plain_ctx, boxed_ctx = _context(root, Path(tmp) / "data", "off"), _context(root, Path(tmp) / "data", "auto")
        if not boxed_ctx.sandbox.active:
            print(f"bench_sandbox: no sandbox here ({boxed_ctx.sandbox.status.problem}); skipped")
            return 0
        plain, boxed = ShellSession(plain_ctx), ShellSession(boxed_ctx)
        for command in ("true", "ls -R . > /dev/null"):
            await _time(plain, command)  # warm both paths up
            await _time(boxed, command)
            ratios, plain_times, boxed_times = [], [], []
            for i in range(repeats):
                pair = (plain, boxed) if i % 2 == 0 else (boxed, plain)
                times = {id(s): await _time(s, command) for s in pair}
                plain_times.append(times[id(plain)])
                boxed_times.append(times[id(boxed)])
                ratios.append(times[id(boxed)] / times[id(plain)])
            extra = statistics.median(boxed_times) - statistics.median(plain_times)
            print(f"{command!r:<24} unsandboxed {statistics.median(plain_times) * 1000:6.1f} ms · sandboxed "
                  f"{statistics.median(boxed_times) * 1000:6.1f} ms · +{extra * 1000:.1f} ms a command · "
                  f"{statistics.median(ratios):.2f}x (median of {repeats} pairs)")
        scans = []
        for _ in range(repeats):
            start = time.perf_counter()
            tagged_pids(["bench-none:1", "bench-none:2"])
            scans.append(time.perf_counter() - start)
        processes = sum(1 for name in os.listdir("/proc") if name.isdigit())
        print(f"process-tag scan of /proc ({processes} processes): {statistics.median(scans) * 1000:.2f} ms")
        await plain_ctx.sandbox.close()
        await boxed_ctx.sandbox.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    options = parser.parse_args()
    sys.exit(asyncio.run(main(10 if options.quick else 60)))
