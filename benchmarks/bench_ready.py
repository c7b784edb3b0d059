"""Time until the first prompt can be sent and answered (litellm warmed), and typing while anvil warms up.

The app has no on-screen "ready" signal (the status bar looks the same before and after the runtime is
built), so this measures the moment a person actually cares about, end to end in a real terminal:
anvil starts in tmux against the local scripted OpenAI-compatible server (tests/support/openai_server.py,
``--model openai/scripted --api-base URL``, so the answer goes through litellm's real import and HTTP path);
the moment the first text is on screen the benchmark types a prompt and Enter, then polls capture-pane until
the server's answer is visible. "First answer" is the time from ``tmux new-session`` to that moment; the
server answers at once, so it is start-up + litellm import + one local round trip + rendering.
Meanwhile a key is typed every 40 ms and the time until it is echoed in the input is recorded: DESIGN.md
says typing is never blocked by the background warm-up.

References, measured in the same run, alternating with anvil:
- the bare Textual app (one Static, one focused Input): its first paint and its key echo latency
  (what tmux, polling and Textual cost with nothing else going on);
- ``load_litellm()`` in a fresh interpreter: the import anvil defers until after the first paint.
  bare paint + that import is the least a paint-first, import-after design can take.

    python benchmarks/bench_ready.py            # 5 runs each, medians
    python benchmarks/bench_ready.py --quick    # 1 run
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import (
    REPO,
    BenchError,
    Pane,
    TmuxServer,
    anvil_argv,
    anvil_env,
    bare_app_argv,
    have_tmux,
    median_ms,
    p95_ms,
    ratio,
)

ANSWER = "pong-7731"
KEY = "z"  # a letter absent from the app's empty screen, so counting it finds the echo
KEY_INTERVAL = 0.04


def litellm_import_seconds() -> float:
    """Wall time of a fresh interpreter importing litellm the way anvil does (minus the bare interpreter)."""
    code = "from anvil.core.model import load_litellm; load_litellm()"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=120)
    with_import = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import anvil.core.model"], check=True, capture_output=True, timeout=60)
    return with_import - (time.perf_counter() - start)


def start_server(directory: Path, answers: int) -> tuple[subprocess.Popen[str], str]:
    turns = directory / "turns.json"
    turns.write_text(json.dumps([{"text": ANSWER}] * answers))
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "openai_server.py"), str(turns)],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def echo_latencies(pane: Pane, until: str | None, count: int, timeout: float = 60.0) -> tuple[list[float], float]:
    """Type KEY every KEY_INTERVAL and time each echo; stop once ``until`` is on screen (or after ``count`` keys).

    Returns the latencies and the perf_counter at which ``until`` was first seen (0 if not waited for).
    """
    latencies: list[float] = []
    seen_at = 0.0
    shown = pane.screen().count(KEY)
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        sent = time.perf_counter()
        pane.type(KEY)
        while time.perf_counter() < deadline:
            screen = pane.screen()
            if until and not seen_at and until in screen:
                seen_at = time.perf_counter()
            if screen.count(KEY) > shown:
                latencies.append(time.perf_counter() - sent)
                shown = screen.count(KEY)
                break
        if (until and seen_at) or (not until and len(latencies) >= count):
            return latencies, seen_at
        pause_end = time.perf_counter() + KEY_INTERVAL
        while time.perf_counter() < pause_end:
            if until and until in pane.screen():
                return latencies, time.perf_counter()
    raise BenchError(f"timed out after {timeout:.0f}s ({'waiting for ' + until if until else 'typing'});\n"
                     f"{pane.screen()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 run instead of 5")
    parser.add_argument("--runs", type=int)
    args = parser.parse_args()
    if not have_tmux():
        return 0
    runs = args.runs or (1 if args.quick else 5)
    results: dict[str, list[float]] = {k: [] for k in ("bare_paint", "litellm", "paint", "answer")}
    bare_keys: list[float] = []
    warm_keys: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-ready-") as tmp, TmuxServer() as tmux:
        server, url = start_server(Path(tmp), runs + 1)
        try:
            with anvil_env("bench-ready-") as (project, env):
                env["OPENAI_API_KEY"] = "sk-local-bench"  # the local server ignores it; litellm wants one
                bare = bare_app_argv(Path(tmp))
                anvil = anvil_argv("--model", "openai/scripted", "--api-base", url)
                for run in range(runs + 1):  # run 0 warms the file cache and .pyc files: not counted
                    with tmux.session(bare, project, env) as pane:
                        paint = pane.first_paint()
                        keys, _ = echo_latencies(pane, None, 5)
                    with tmux.session(anvil, project, env) as pane:
                        anvil_paint = pane.first_paint()
                        pane.type("ping")
                        pane.keys("Enter")
                        keys_during, seen = echo_latencies(pane, ANSWER, 0)
                    imported = litellm_import_seconds()
                    if run:
                        results["bare_paint"].append(paint)
                        results["paint"].append(anvil_paint)
                        results["answer"].append(seen - pane.started)
                        results["litellm"].append(imported)
                        bare_keys += keys
                        warm_keys += keys_during
        finally:
            server.terminate()
            server.wait(timeout=10)
    bare_paint, litellm_ms = median_ms(results["bare_paint"]), median_ms(results["litellm"])
    paint, answer = median_ms(results["paint"]), median_ms(results["answer"])
    floor = bare_paint + litellm_ms
    print(f"time to the first answered prompt, median of {runs} runs (tmux 120x40, polling capture-pane)")
    print(f"  bare Textual app, first paint            {bare_paint:7.1f} ms  (reference)")
    print(f"  load_litellm() in a fresh interpreter    {litellm_ms:7.1f} ms  (reference)")
    print(f"  anvil first paint                        {paint:7.1f} ms  {ratio(paint, bare_paint)} of bare paint")
    print(f"  anvil first answer, prompt typed at paint {answer:7.1f} ms  {ratio(answer, floor)} of bare paint + "
          f"litellm import ({floor:.0f} ms)")
    print("key echo latency (send-keys to visible in the input)")
    print(f"  bare Textual app, idle        median {median_ms(bare_keys):6.1f} ms  p95 {p95_ms(bare_keys):6.1f} ms"
          f"  ({len(bare_keys)} keys, reference)")
    print(f"  anvil while warming up        median {median_ms(warm_keys):6.1f} ms  p95 {p95_ms(warm_keys):6.1f} ms"
          f"  max {max(warm_keys, default=0) * 1000:6.1f} ms  ({len(warm_keys)} keys; budget 50 ms)")
    if warm_keys and bare_keys:
        print(f"  ratio of medians {statistics.median(warm_keys) / statistics.median(bare_keys):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
