"""Budgets: the TUI's first paint within 1.3x of a bare Textual app (one Static, one Input); keys handled
within 50 ms while a 500 token/s answer streams.

First paint: both apps are measured the same way in the same run, alternating: a detached tmux session
starts the process, and capture-pane is polled until the screen shows any text; the time from just before
`tmux new-session` to that moment is the first paint. tmux's own start-up is in both figures.
anvil runs with `--model scripted` in an empty temporary project with temporary XDG directories.

Streaming: the app runs headless (App.run_test: the full render pipeline, no terminal output) with a
scripted model streaming Markdown at about 500 tokens/s (one token taken as 4 characters); a key is pressed
every 50 ms and the time until the app has handled it (Pilot.press returns) is recorded.

    python benchmarks/bench_tui.py            # 10 runs each, medians
    python benchmarks/bench_tui.py --quick    # 3 runs each (a smoke test)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

BUDGET = 1.3
BARE_APP = '''
from textual.app import App
from textual.widgets import Input, Static


class Bare(App):
    def compose(self):
        yield Static("anvil")
        yield Input()


Bare().run()
'''


# A private tmux server (its own socket) with a session that lives for the whole run: measured sessions
# then never pay for a server start, and ending one never races the server shutting down.
SOCKET = f"anvil-bench-{os.getpid()}"


def tmux(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=check)


def first_paint(command: str, cwd: Path, env: dict[str, str], timeout: float = 30.0) -> float:
    """Seconds from starting ``command`` in a fresh tmux session to the first visible text."""
    name = f"bench-tui-{uuid.uuid4().hex[:8]}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    shell = f"cd {shlex.quote(str(cwd))} && exec env {exports} {command}"
    start = time.perf_counter()
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", shell)
    try:
        while time.perf_counter() - start < timeout:
            if tmux("capture-pane", "-p", "-t", name, check=False).stdout.strip():
                return time.perf_counter() - start
        raise RuntimeError(f"nothing appeared within {timeout:.0f}s: {command}")
    finally:
        tmux("kill-session", "-t", name, check=False)


STREAM_PARAGRAPH = ("The transcript renders this answer as Markdown while it streams, with `inline code`, "
                    "**bold** words and a list:\n\n- one item\n- another item\n\n```python\n"
                    "def add(a, b):\n    return a + b\n```\n\n")


class PacedModel:
    """Streams ``text`` at ``tokens_per_second`` by the clock, like a network buffer: whatever is due when the
    reader comes back is delivered at once (one chunk per token), so a slow reader falls behind measurably
    instead of slowing the source down."""

    name = "paced"

    def __init__(self, text: str, tokens_per_second: float) -> None:
        self.text = text
        self.chars_per_second = tokens_per_second * 4
        self.source_done = 0.0

    def context_window(self) -> int:
        return 200_000

    def accepts_images(self) -> bool:
        return False

    def preflight(self) -> None:
        return None

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[Any]:
        from anvil.core.model.protocol import Completion, Usage

        start, sent = time.perf_counter(), 0
        while sent < len(self.text):
            await asyncio.sleep(0.002)
            due = min(len(self.text), int((time.perf_counter() - start) * self.chars_per_second))
            for at in range(sent, due, 4):
                yield self.text[at:min(at + 4, due)]
            sent = max(sent, due)
        self.source_done = start + len(self.text) / self.chars_per_second
        yield Completion(self.text, [], Usage(1000, len(self.text) // 4), cost=None, finish_reason="stop")


async def stream_latency(seconds: float) -> tuple[float, list[float]]:
    """(seconds the transcript finished after the source, key latencies in seconds) for one 500 token/s answer."""
    from textual import events

    from anvil.config import Settings
    from anvil.runtime import open_runtime
    from anvil.tui.app import AnvilApp

    chars = int(seconds * 500 * 4)
    text = (STREAM_PARAGRAPH * (chars // len(STREAM_PARAGRAPH) + 1))[:chars]
    with tempfile.TemporaryDirectory(prefix="bench-tui-stream-") as tmp:
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        os.environ["XDG_DATA_HOME"] = str(Path(tmp) / "data")
        model = PacedModel(text, 500)
        runtime = open_runtime(Settings(model="scripted"), Path(tmp), model=model)  # type: ignore[arg-type]
        app = AnvilApp(Path(tmp), runtime=runtime)
        latencies: list[float] = []
        async with app.run_test(size=(120, 40)) as pilot:
            while not app.started:
                await pilot.pause(0.01)
            app.send("stream")
            typed = 0
            while app.busy:
                # Pilot.press waits for the app to go idle, which a stream never does: post the key and
                # watch for its effect instead.
                typed += 1
                before = time.perf_counter()
                app.prompt.post_message(events.Key("x", "x"))
                while app.prompt.text.count("x") < typed:
                    await asyncio.sleep(0.0005)
                latencies.append(time.perf_counter() - before)
                await asyncio.sleep(0.05)
            lag = time.perf_counter() - model.source_done
            runtime.session.close()
    return lag, latencies


def measure_first_paint(runs: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        base = Path(tmp)
        project = base / "project"
        project.mkdir()
        bare = base / "bare_app.py"
        bare.write_text(BARE_APP)
        env = {"XDG_CONFIG_HOME": str(base / "config"), "XDG_DATA_HOME": str(base / "data"),
               "TERM": os.environ.get("TERM", "xterm-256color"), "PATH": os.environ.get("PATH", "")}
        python = shlex.quote(sys.executable)
        commands = {"bare Textual app": f"{python} {shlex.quote(str(bare))}",
                    "anvil": f"{python} -m anvil.cli --model scripted"}
        for command in commands.values():  # warm the OS file cache and .pyc files: not part of the figure
            first_paint(command, project, env)
        times: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(runs):
            for label, command in commands.items():
                times[label].append(first_paint(command, project, env))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs each instead of 10")
    parser.add_argument("--runs", type=int, help="runs of each app")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed: nothing measured")
        return 0
    runs = args.runs or (3 if args.quick else 10)
    tmux("new-session", "-d", "-s", "keeper", "sleep 86400")
    try:
        times = measure_first_paint(runs)
    finally:
        tmux("kill-server", check=False)
    seconds = 2.0 if args.quick else 8.0
    lag, latencies = asyncio.run(stream_latency(seconds))
    latencies.sort()
    p95 = latencies[int(len(latencies) * 0.95)] * 1000 if latencies else 0.0
    bare_ms = statistics.median(times["bare Textual app"]) * 1000
    anvil_ms = statistics.median(times["anvil"]) * 1000
    ratio = anvil_ms / bare_ms
    print(f"first paint, median of {runs} runs (process start to first visible text, tmux 120x40)")
    print(f"  bare Textual app   {bare_ms:7.1f} ms  (reference)")
    print(f"  anvil              {anvil_ms:7.1f} ms  ratio {ratio:.2f}x  (budget {BUDGET}x: "
          f"{'within' if ratio <= BUDGET else 'OVER'})")
    if latencies:
        print(f"streaming {seconds:.0f} s of Markdown at 500 tokens/s (headless): the transcript finished "
              f"{lag * 1000:.0f} ms after the source")
        print(f"  keys while streaming ({len(latencies)}): median {statistics.median(latencies) * 1000:.1f} ms, "
              f"p95 {p95:.1f} ms, max {latencies[-1] * 1000:.1f} ms (budget 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
