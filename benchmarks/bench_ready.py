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

Second, typing while anvil warms up, without sending (what waiting for pauses in typing buys a person who
types): from the first paint, a key every 40 ms for 6 s ("steady", no pause the warm-up could use), or
bursts of 8 such keys with 0.4-0.8 s pauses for 8 s ("bursts"); then Enter, and the time until the answer
is on screen, then a second prompt's answer in the same session (warmed up by then: the reference for what
an answer costs once nothing is left to load). The next key is typed 40 ms after the previous one is
echoed, as for the keys above, so a stall delays one key instead of several queued behind it.

References, measured in the same run, alternating with anvil:
- the bare Textual app (one Static, one focused Input): its first paint and its key echo latency
  (what tmux, polling and Textual cost with nothing else going on);
- ``load_litellm()`` in a fresh interpreter: the import anvil defers until after the first paint.
  bare paint + that import is the least a paint-first, import-after design can take.

    python benchmarks/bench_ready.py            # 5 runs each (typing: 3 runs), medians
    python benchmarks/bench_ready.py --quick    # 1 run, typing for 3 s and 4 s
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
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
BURST = 8  # keys in a burst
BUDGET = 0.05  # DESIGN.md: a key is echoed within 50 ms


def litellm_import_seconds() -> float:
    """Wall time of a fresh interpreter importing litellm the way anvil does (minus the bare interpreter)."""
    code = "from anvil.core.model.litellm_model import load_litellm; load_litellm()"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=120)
    with_import = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import anvil.core.model.litellm_model"], check=True, capture_output=True,
                   timeout=60)
    return with_import - (time.perf_counter() - start)


def start_server(directory: Path, answers: int) -> tuple[subprocess.Popen[str], str]:
    turns = directory / "turns.json"
    turns.write_text(json.dumps([{"text": ANSWER}] * answers))
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "openai_server.py"), str(turns)],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def steady(seconds: float) -> Iterator[float]:
    """Pauses between keys: KEY_INTERVAL each, for ``seconds`` from the first pause asked for."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        yield KEY_INTERVAL


def bursts(seconds: float, rng: random.Random) -> Iterator[float]:
    """Pauses between keys: bursts of BURST keys KEY_INTERVAL apart, then 0.4-0.8 s; for ``seconds``."""
    for count, pause in enumerate(steady(seconds), 1):
        yield pause if count % BURST else rng.uniform(0.4, 0.8)


def echo_latencies(pane: Pane, pauses: Iterable[float], until: str | None = None,
                   timeout: float = 60.0) -> tuple[list[float], float]:
    """Type KEY, time its echo, wait the next of ``pauses``, and again; stop when the pauses run out, or once
    ``until`` is on screen (polled during the pauses too).

    Returns the latencies and the perf_counter at which ``until`` was first seen (0 if not waited for).
    """
    latencies: list[float] = []
    seen_at = 0.0
    shown = pane.screen().count(KEY)
    deadline = time.perf_counter() + timeout
    next_pauses = iter(pauses)
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
        pause = next(next_pauses, None)
        if (until and seen_at) or pause is None:
            return latencies, seen_at
        pause_end = time.perf_counter() + pause
        while until and time.perf_counter() < pause_end:
            if until in pane.screen():
                return latencies, time.perf_counter()
        time.sleep(max(0.0, pause_end - time.perf_counter()))  # no busy wait: the machine's cores are anvil's
    raise BenchError(f"timed out after {timeout:.0f}s ({'waiting for ' + until if until else 'typing'});\n"
                     f"{pane.screen()}")


def type_then_send(pane: Pane, pauses: Iterator[float]) -> tuple[list[float], float, float]:
    """From the first paint, type without sending, then Enter: (key latencies, answer after Enter, the answer
    to a second prompt sent once the first turn is over)."""
    pane.first_paint()
    keys, _ = echo_latencies(pane, pauses)
    answers: list[float] = []
    for prompt in ("", "again"):  # "again" has no KEY and no ANSWER in it
        if prompt:
            pane.type(prompt)
        entered = time.perf_counter()
        pane.keys("Enter")
        shown = pane.wait(lambda screen: screen.count(ANSWER) > len(answers), "the answer", 60)[0]
        answers.append(shown - entered)
        # the turn is over when the status bar (the last line) shows no phase ("Thinking…")
        pane.wait(lambda screen: "…" not in screen.rstrip().rsplit("\n", 1)[-1], "the end of the turn")
    return keys, answers[0], answers[1]


def echo_line(label: str, keys: list[float], bare: list[float]) -> str:
    over = sum(1 for latency in keys if latency > BUDGET)
    return (f"  {label:<29} median {median_ms(keys):6.1f} ms  p95 {p95_ms(keys):6.1f} ms  max "
            f"{max(keys, default=0) * 1000:6.1f} ms  ({over} of {len(keys)} keys over {BUDGET * 1000:.0f} ms; "
            f"{ratio(median_ms(keys), median_ms(bare)).strip()} of bare)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 run instead of 5, shorter typing")
    parser.add_argument("--runs", type=int)
    args = parser.parse_args()
    if not have_tmux():
        return 0
    runs = args.runs or (1 if args.quick else 5)
    typing_runs = min(runs, 3)
    seconds = {"steady": 3.0, "bursts": 4.0} if args.quick else {"steady": 6.0, "bursts": 8.0}
    results: dict[str, list[float]] = {k: [] for k in ("bare_paint", "litellm", "paint", "answer")}
    bare_keys: list[float] = []
    warm_keys: list[float] = []
    typed: dict[str, dict[str, list[float]]] = {v: {"keys": [], "answer": [], "again": []} for v in seconds}
    with tempfile.TemporaryDirectory(prefix="bench-ready-") as tmp, TmuxServer() as tmux:
        server, url = start_server(Path(tmp), runs + 1 + 2 * len(seconds) * typing_runs)
        try:
            with anvil_env("bench-ready-") as (project, env):
                env["OPENAI_API_KEY"] = "sk-local-bench"  # the local server ignores it; litellm wants one
                bare = bare_app_argv(Path(tmp))
                anvil = anvil_argv("--model", "openai/scripted", "--api-base", url)
                for run in range(runs + 1):  # run 0 warms the file cache and .pyc files: not counted
                    with tmux.session(bare, project, env) as pane:
                        paint = pane.first_paint()
                        keys, _ = echo_latencies(pane, [KEY_INTERVAL] * 4)
                    with tmux.session(anvil, project, env) as pane:
                        anvil_paint = pane.first_paint()
                        pane.type("ping")
                        pane.keys("Enter")
                        keys_during, seen = echo_latencies(pane, itertools.repeat(KEY_INTERVAL), ANSWER)
                    imported = litellm_import_seconds()
                    if run:
                        results["bare_paint"].append(paint)
                        results["paint"].append(anvil_paint)
                        results["answer"].append(seen - pane.started)
                        results["litellm"].append(imported)
                        bare_keys += keys
                        warm_keys += keys_during
                    for variant, figures in typed.items() if 0 < run <= typing_runs else ():
                        pauses = steady(seconds[variant]) if variant == "steady" else \
                            bursts(seconds[variant], random.Random(run))
                        with tmux.session(anvil, project, env) as pane:
                            keys, answer, again = type_then_send(pane, pauses)
                        figures["keys"] += keys
                        figures["answer"].append(answer)
                        figures["again"].append(again)
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
    sent_at_paint = median_ms([a - p for a, p in zip(results["answer"], results["paint"], strict=True)])
    print(f"typing from the first paint without sending, then Enter, {typing_runs} run(s) each "
          f"(key echo reference: bare app idle, above)")
    print(echo_line(f"anvil, steady typing {seconds['steady']:.0f} s", typed["steady"]["keys"], bare_keys))
    print(echo_line(f"anvil, bursts of {BURST}, {seconds['bursts']:.0f} s", typed["bursts"]["keys"], bare_keys))
    for variant, figures in typed.items():
        after, label = median_ms(figures["answer"]), f"answer after Enter, {seconds[variant]:.0f} s of {variant}"
        print(f"  {label:<41}{after:7.1f} ms  {ratio(after, sent_at_paint)} of a prompt sent at paint "
              f"({sent_at_paint:.0f} ms after paint)")
    again = median_ms([t for figures in typed.values() for t in figures["again"]])
    print(f"  {'answer to a second prompt, warmed up':<41}{again:7.1f} ms  (reference: nothing left to load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
