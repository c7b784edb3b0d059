"""Launch to the first request byte (issue 24, goals 1 and 2): headless `anvil -p hi`, and a prompt typed into the
app at its first paint, cold and through the warm engine (ANVIL_ENGINE=on), against local servers that answer at
once.

Headless: each run is `anvil -p hi` (the `anvil` command: anvil.engine.client) against the scripted
OpenAI-compatible server and the local Anthropic Messages server (benchmarks/_stream_peer.py logs the moment
each request's first line arrived, on the system-wide monotonic clock). Figures: launch to that moment, the
whole run, and the run's peak memory (VmHWM by wait4; through the engine that is the small client, and the
engine's own resident memory is printed beside it, shared by all runs). References in the same run:
`python -c pass`, `anvil -p hi --model scripted` (no provider), and, when npm can install it into a temp dir
(full mode only), Claude Code's whole `claude -p hi` against the same local Anthropic server ("peer not
available" otherwise).

The app: in tmux, `anvil --model openai/scripted --api-base URL`, the prompt typed as soon as anything is on
screen and sent; the figure is launch (the tmux session's start) to the request's first byte, with the key echo
of what is typed meanwhile; reference: the bare Textual app's first paint.

Run: python benchmarks/bench_first_request.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import TmuxServer, anvil_env, bare_app_argv, have_tmux, median_ms, p95_ms
from bench_ready import KEY_INTERVAL, echo_latencies

HERE = Path(__file__).resolve().parent
CLAUDE_CODE = "@anthropic-ai/claude-code"
RUN_TIMEOUT = 120.0


def anvil_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "anvil.engine.client", *args]


@contextlib.contextmanager
def server(kind: str, directory: Path) -> Iterator[tuple[str, Path]]:
    """A local server (``serve`` or ``serve-anthropic``) that answers every request at once; its URL and the
    file its request times go to."""
    turns, timings = directory / f"{kind}-turns.json", directory / f"{kind}-timings.jsonl"
    turns.write_text(json.dumps([{"text": "Hello from the local server."}] * 200))
    timings.touch()
    proc = subprocess.Popen([sys.executable, str(HERE / "_stream_peer.py"), kind, str(turns), str(timings)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip(), timings
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def request_times(timings: Path) -> list[float]:
    return [json.loads(line)["request"] for line in timings.read_text().splitlines() if '"request"' in line]


def timed_run(argv: list[str], env: dict[str, str], cwd: Path, timings: Path | None) -> tuple[float, float, float]:
    """(launch to first request byte, whole run, peak resident MB) of one process; nan where not seen."""
    seen = len(request_times(timings)) if timings else 0
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    whole = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        assert proc.stderr is not None
        raise RuntimeError(f"{' '.join(argv[:6])}... exited {proc.returncode}: {proc.stderr.read()[-500:]}")
    first = float("nan")
    if timings is not None:
        new = request_times(timings)[seen:]
        first = new[0] - start if new else float("nan")
    return first, whole, usage.ru_maxrss / 1024


def engine(env: dict[str, str], action: str, cwd: Path) -> str:
    done = subprocess.run(anvil_command("engine", action), env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    return done.stdout + done.stderr


def claude_code(directory: Path) -> tuple[Path | None, str]:
    """Claude Code installed from npm into ``directory``: its executable, or None and why not."""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    try:
        done = subprocess.run([npm, "install", "--prefix", str(directory), "--no-audit", "--no-fund", CLAUDE_CODE],
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "npm install timed out (registry not reachable?)"
    binary = directory / "node_modules" / ".bin" / "claude"
    if done.returncode != 0 or not binary.exists():
        return None, f"npm install failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    return binary, ""


def line(label: str, runs: list[tuple[float, float, float]], note: str = "") -> str:
    first = [r[0] for r in runs if r[0] == r[0]]
    whole, peak = [r[1] for r in runs], max(r[2] for r in runs)
    request = f"{median_ms(first):7.0f} ms" if first else "      - "
    return (f"  {label:<44} first request {request}   whole run {median_ms(whole):7.0f} ms   "
            f"peak {peak:5.0f} MB{note}")


def headless(runs: int, quick: bool, directory: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    with server("serve", directory) as (openai_url, openai_times), \
            server("serve-anthropic", directory) as (anthropic_url, anthropic_times), \
            anvil_env("bench-first-") as (project, env):
        env.update(OPENAI_API_KEY="sk-local-bench", ANTHROPIC_API_KEY="sk-ant-local-bench")
        cold = {**env, "ANVIL_ENGINE": "off"}
        warm = {**env, "ANVIL_ENGINE": "on"}
        cases = {"openai": (["--model", "openai/scripted", "--api-base", openai_url], openai_times),
                 "anthropic": (["--model", "anthropic/claude-sonnet-4-5", "--api-base", anthropic_url],
                               anthropic_times)}
        python = [timed_run([sys.executable, "-c", "pass"], env, project, None) for _ in range(runs)]
        scripted = [timed_run(anvil_command("-p", "hi", "--model", "scripted"), cold, project, None)
                    for _ in range(runs + 1)][1:]  # the first compiles .pyc files
        results: dict[str, list[tuple[float, float, float]]] = {}
        for name, (args, times) in cases.items():
            results[f"cold {name}"] = [timed_run(anvil_command("-p", "hi", *args), cold, project, times)
                                       for _ in range(runs)]
        started = time.monotonic()
        status = engine(warm, "start", project)
        warm_up = time.monotonic() - started
        resident = re.search(r"([\d.]+) MB resident", status)
        try:
            for name, (args, times) in cases.items():
                results[f"engine {name}"] = [timed_run(anvil_command("-p", "hi", *args), warm, project, times)
                                             for _ in range(runs)]
        finally:
            engine(warm, "stop", project)
        peer: list[tuple[float, float, float]] = []
        why = "not tried in quick mode"
        if not quick:
            binary, why = claude_code(directory / "claude-code")
            if binary is not None:
                peer_env = {**env, "ANTHROPIC_BASE_URL": anthropic_url.removesuffix("/v1"),
                            "ANTHROPIC_API_KEY": "sk-ant-local-bench", "DISABLE_AUTOUPDATER": "1",
                            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1"}
                try:
                    peer = [timed_run([str(binary), "-p", "hi"], peer_env, project, anthropic_times)
                            for _ in range(runs + 1)][1:]
                except (RuntimeError, OSError) as exc:
                    why = f"it did not run here: {str(exc)[:200]}"
    engine_note = f"   (engine: {resident.group(1) if resident else '?'} MB resident, warm after {warm_up:.1f} s)"
    print(f"headless `anvil -p hi`, launch to the first request byte, median of {runs} runs (bench_first_request)")
    print(line("python -c pass (reference)", python))
    print(line("anvil --model scripted, no provider (reference)", scripted))
    for name, figures_ in results.items():
        print(line(f"anvil, {name}", figures_, engine_note if name.startswith("engine") else ""))
    if peer:
        print(line("Claude Code `claude -p hi`, anthropic (peer)", peer))
    else:
        print(f"  Claude Code: peer not available ({why})")
    for name, figures_ in results.items():
        figures[name] = statistics.median(r[0] for r in figures_)
        figures[f"{name} peak"] = max(r[2] for r in figures_)
    figures["peer whole"] = statistics.median(r[1] for r in peer) if peer else float("nan")
    figures["engine resident"] = float(resident.group(1)) if resident else float("nan")
    return figures


def tui(runs: int) -> dict[str, float]:
    """Launch to the first request byte of a prompt typed at the first paint, cold and through the engine."""
    figures: dict[str, list[float]] = {"bare": [], "cold": [], "engine": [], "cold keys": [], "engine keys": []}
    with tempfile.TemporaryDirectory(prefix="bench-first-tui-") as tmp, TmuxServer() as tmux, \
            server("serve", Path(tmp)) as (url, times), anvil_env("bench-first-tui-") as (project, env):
        env["OPENAI_API_KEY"] = "sk-local-bench"
        app = anvil_command("--model", "openai/scripted", "--api-base", url)
        warm = {**env, "ANVIL_ENGINE": "on"}
        for run in range(runs + 1):  # run 0 warms the file cache
            with tmux.session(bare_app_argv(Path(tmp)), project, env) as pane:
                bare = pane.first_paint()
            if run:
                figures["bare"].append(bare)
            for mode, environment in (("cold", {**env, "ANVIL_ENGINE": "off"}), ("engine", warm)):
                if mode == "engine" and run == 0:
                    engine(warm, "start", project)
                seen = len(request_times(times))
                with tmux.session(app, project, environment) as pane:
                    pane.first_paint()
                    keys, _ = echo_latencies(pane, [KEY_INTERVAL] * 5)
                    pane.keys("Enter")
                    deadline = time.monotonic() + RUN_TIMEOUT
                    while len(request_times(times)) == seen and time.monotonic() < deadline:
                        time.sleep(0.01)
                    new = request_times(times)[seen:]
                    if run and new:
                        figures[mode].append(new[0] - pane.started)
                        figures[f"{mode} keys"] += keys
        engine(warm, "stop", project)
    print(f"the app: a prompt typed at the first paint, launch to its first request byte, median of {runs} runs (tmux)")
    print(f"  bare Textual app, first paint (reference)   {median_ms(figures['bare']):7.0f} ms")
    for mode in ("cold", "engine"):
        keys = figures[f"{mode} keys"]
        print(f"  anvil, {mode:<6} first request byte           {median_ms(figures[mode]):7.0f} ms   "
              f"key echo meanwhile median {median_ms(keys):5.1f} ms, p95 {p95_ms(keys):5.1f} ms ({len(keys)} keys)")
    return {name: statistics.median(values) if values and "keys" not in name else
            (p95_ms(values) / 1000 if values else float("nan")) for name, values in figures.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 run of each, no peer")
    parser.add_argument("--runs", type=int)
    args = parser.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
        found = headless(runs, args.quick, Path(tmp))
    peer = found["peer whole"]
    print("issue 24 goal 1 (headless), figure vs reference:")
    for name in ("cold openai", "cold anthropic", "engine openai", "engine anthropic"):
        versus = f", {found[name] / peer:.2f}x of Claude Code's whole run (budget 2x)" if peer == peer else ""
        shared = f" + the engine's {found['engine resident']:.0f} MB" if name.startswith("engine") else ""
        print(f"  GOAL 1 {name:<17} first request {found[name] * 1000:6.0f} ms (budget 1000 ms){versus}; "
              f"peak {found[name + ' peak']:4.0f} MB{shared} (budget 150 MB)")
    if have_tmux():
        shown = tui(runs)
        print("issue 24 goal 2 (the app), figure vs reference:")
        for mode in ("cold", "engine"):
            print(f"  GOAL 2 {mode:<6} prompt at paint on the wire {shown[mode] * 1000:6.0f} ms (budget 1000 ms; "
                  f"bare paint {shown['bare'] * 1000:.0f} ms); key p95 {shown[mode + ' keys'] * 1000:5.1f} ms "
                  "(budget 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
