"""Long sessions: resuming a 1,000-turn session, and memory as turns accumulate.

Budget (DESIGN.md): 1,000 turns with tool output stay responsive (the transcript is pruned), memory bounded.

1. Resume, in a real terminal (tmux 120x40). A 1,000-turn session file is written directly in the session
   format (anvil/core/session.py: the session record, then per turn a turn_started event, the user message,
   an assistant message with a read_file call, its 30-line tool result, the closing assistant message and
   a turn_ended event), then opened with ``anvil --resume ID``. Against a fresh session in the same run:
   first paint, when the resumed history is on screen, when a prompt typed at first paint is answered,
   key echo latency afterwards, mouse-wheel scroll latency in the resumed transcript, and the app's resident
   memory (VmRSS of the pane's process). The model is
   ``scripted:FILE`` (anvil's scripted model answering "pong"), so litellm is loaded in neither case and the
   difference is the session; the context window is raised so that the first prompt does not compact
   (bench_context.py measures compaction).
2. Growth, in-process (App.run_test, headless, 120x40): N scripted turns (each: a read_file call with a
   30-line result, then an answer) driven through the real app, sampling RSS every 100 turns, with the
   time per turn. Reference: the same turns
   through the engine alone (Agent.run_turn, no app), in its own process, so that the difference is what
   the app keeps. The engine compacts at its threshold as in real use, which is what bounds the history.

    python benchmarks/bench_session.py            # 1,000-turn resume (3 runs each), 600 turns of growth
    python benchmarks/bench_session.py --quick    # 1,000-turn resume (1 run), 150 turns of growth
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from _harness import Pane, TmuxServer, anvil_argv, anvil_env, have_tmux, median_ms, p95_ms, ratio, rss_mb

ANSWER = "pong-5521"
KEY = "z"
TURNS = 1000
RESULT_LINES = 30
MODULE = "".join(f"def handler_{i}(request, context):  return compute(request.body, {i})\n"
                 for i in range(RESULT_LINES))


# -- 1. resume in tmux ---------------------------------------------------------------------------------

def write_session(data_home: Path, project: Path, turns: int) -> str:
    """A session file of ``turns`` turns with tool output, in the format anvil writes; returns its id."""
    from anvil.core.session.store import SessionStore

    store = SessionStore(data_home / "anvil", project)
    session = store.create("scripted", "bench", deferred=False)  # the header on disk: lines are appended below
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(MODULE.splitlines(), 1))
    lines = []
    for turn in range(1, turns + 1):
        prompt = f"Turn {turn}: look at handler {turn % RESULT_LINES} and tell me what it computes."
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": "module.py"})}}
        records: list[dict[str, Any]] = [
            {"t": "message", "message": {"role": "user", "content": prompt}},
            {"t": "event", "event": {"type": "turn_started", "turn": turn, "prompt": prompt,
                                     "session_id": session.id}},
            {"t": "message", "message": {"role": "assistant", "content": "Let me read the module.",
                                         "tool_calls": [call]}},
            {"t": "message", "message": {"role": "tool", "tool_call_id": call["id"], "name": "read_file",
                                         "content": numbered}},
            {"t": "message", "message": {"role": "assistant", "content":
                                         f"Handler {turn % RESULT_LINES} passes the body to `compute` with "
                                         f"its index; nothing else happens there (turn {turn})."}},
            {"t": "event", "event": {"type": "turn_ended", "turn": turn, "reason": "done", "iterations": 2,
                                     "message": ""}},
        ]
        lines += [json.dumps(record) for record in records]
    session.close()
    with session.path.open("a", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    return session.id


def key_latencies(pane: Pane, count: int, timeout: float = 30.0) -> list[float]:
    latencies = []
    deadline = time.perf_counter() + timeout
    for _ in range(count):
        shown = pane.screen().count(KEY)
        sent = time.perf_counter()
        pane.type(KEY)
        while time.perf_counter() < deadline:
            if pane.screen().count(KEY) > shown:
                latencies.append(time.perf_counter() - sent)
                break
        time.sleep(0.03)
    return latencies


def wheel_latencies(pane: Pane, count: int, timeout: float = 30.0) -> list[float]:
    """Scroll the transcript up one mouse-wheel step at a time (an SGR mouse report typed into the pane, as a
    terminal sends it), timing each until the screen changes."""
    latencies = []
    for _ in range(count):
        before = pane.screen()
        sent = time.perf_counter()
        pane.type("\x1b[<64;20;10M")  # wheel up at column 20, row 10: over the transcript
        latencies.append(pane.wait(lambda screen, before=before: screen != before, "the scroll", timeout)[0] - sent)
        time.sleep(0.03)
    return latencies


def measure_resume(runs: int) -> None:
    results: dict[str, dict[str, list[float]]] = {k: {"paint": [], "history": [], "answer": [], "rss": [],
                                                      "keys": [], "wheel": []} for k in ("fresh", "resume")}
    with anvil_env("bench-session-") as (project, env), TmuxServer() as tmux:
        (project / "module.py").write_text(MODULE)
        script = project.parent / "script.json"
        script.write_text(json.dumps([{"text": ANSWER}]))
        env["ANVIL_CONTEXT_WINDOW"] = "4000000"  # no compaction before the first answer: not what is measured
        started = time.perf_counter()
        session_id = write_session(Path(env["XDG_DATA_HOME"]), project, TURNS)
        path = next(Path(env["XDG_DATA_HOME"]).rglob(f"{session_id}.jsonl"))
        print(f"resume: a {TURNS:,}-turn session, {path.stat().st_size / 1e6:.1f} MB, written in "
              f"{time.perf_counter() - started:.1f} s; median of {runs} runs, alternating")
        model = ["--model", f"scripted:{script}"]
        for run in range(runs + 1):  # run 0 warms the file cache and .pyc files: not counted
            for label, extra in (("fresh", []), ("resume", ["--resume", session_id])):
                with tmux.session(anvil_argv(*model, *extra), project, env) as pane:
                    paint = pane.first_paint(60)
                    pane.type("ping")
                    pane.keys("Enter")
                    history = 0.0
                    if extra:
                        history = pane.wait_text("Resumed session", 120) - pane.started
                    answer = pane.wait_text(ANSWER, 120) - pane.started
                    time.sleep(0.5)  # let the answer's frame settle before reading memory
                    rss = rss_mb(pane.pid())
                    keys = key_latencies(pane, 10)
                    wheel = wheel_latencies(pane, 10) if extra else []
                if run:
                    row = results[label]
                    row["paint"].append(paint)
                    row["history"].append(history)
                    row["answer"].append(answer)
                    row["rss"].append(rss)
                    row["keys"] += keys
                    row["wheel"] += wheel
    fresh, resume = results["fresh"], results["resume"]
    print(f"  {'':<34}{'fresh':>10}{'resumed':>10}   ratio")
    for label, key in (("first paint", "paint"), ("first prompt answered", "answer")):
        f, r = median_ms(fresh[key]), median_ms(resume[key])
        print(f"  {label:<34}{f:8.0f}ms{r:8.0f}ms  {ratio(r, f)}")
    print(f"  {'history on screen':<34}{'-':>10}{median_ms(resume['history']):8.0f}ms")
    f, r = statistics.median(fresh["rss"]), statistics.median(resume["rss"])
    print(f"  {'resident memory (VmRSS)':<34}{f:8.0f}MB{r:8.0f}MB  {ratio(r, f)}  (+{r - f:.0f} MB)")
    f, r = median_ms(fresh["keys"]), median_ms(resume["keys"])
    print(f"  {'key echo, median':<34}{f:8.1f}ms{r:8.1f}ms  {ratio(r, f)}")
    print(f"  {'key echo, p95':<34}{p95_ms(fresh['keys']):8.1f}ms{p95_ms(resume['keys']):8.1f}ms")
    print(f"  {'wheel scroll to screen, median':<34}{'-':>10}{median_ms(resume['wheel']):8.1f}ms  "
          f"(p95 {p95_ms(resume['wheel']):.1f} ms; reference: key echo)")


# -- 2. growth in-process -------------------------------------------------------------------------------

class LoopModel:
    """Each turn: a read_file call, then an answer. Answers a summary request (no tools offered) with a summary.

    Usage is estimated from the request size, like the scripted model, so the gauge moves and the engine
    compacts at its threshold as it would with a provider. Keeps no copy of the requests (the scripted
    model does, for test assertions, which would make its own memory the thing measured).
    """

    name = "loop"

    def __init__(self, window: int = 200_000) -> None:
        self.window = window
        self.calls = 0
        self.prompt_chars = 0

    def context_window(self) -> int:
        return self.window

    def accepts_images(self) -> bool:
        return False

    def preflight(self) -> None:
        return None

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[Any]:
        from anvil.core.events import ToolCall
        from anvil.core.model.protocol import Completion, Usage

        self.calls += 1
        chars = sum(len(str(m.get("content") or "")) + 40 for m in messages)
        if not tools:
            text, calls = "Summary: the person asked about handlers; each passes the body to compute.", []
        elif messages[-1].get("role") == "tool":
            text, calls = f"Handler {self.calls % RESULT_LINES} passes the body to `compute`; that is all.", []
        else:
            text = "Let me read the module."
            calls = [ToolCall(f"call_{self.calls}", "read_file", json.dumps({"path": "module.py"}))]
        for start in range(0, len(text), 16):
            yield text[start:start + 16]
        yield Completion(text, calls, Usage(chars // 4, max(1, len(text) // 4)),
                         finish_reason="tool_calls" if calls else "stop")


def rss_self() -> float:
    return rss_mb(os.getpid())


async def grow(kind: str, turns: int, every: int) -> list[dict[str, float]]:
    """Child process: drive ``turns`` turns through the app (``tui``) or the engine alone (``engine``)."""
    import gc

    from anvil.config import Settings
    from anvil.runtime import open_runtime

    samples: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-session-grow-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "module.py").write_text(MODULE)
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        os.environ["XDG_DATA_HOME"] = str(Path(tmp) / "data")
        runtime = open_runtime(Settings(model="scripted", auto_approve=True), root, model=LoopModel())  # type: ignore[arg-type]

        def sample(turn: int, seconds: float, extra: dict[str, float]) -> None:
            gc.collect()
            samples.append({"turn": turn, "rss": rss_self(), "turn_ms": seconds * 1000,
                            "history": len(runtime.agent.messages), **extra})

        if kind == "engine":
            sample(0, 0.0, {})
            spent = 0.0
            for turn in range(1, turns + 1):
                start = time.perf_counter()
                async for _ in runtime.agent.run_turn(f"turn {turn}: what does the handler compute?"):
                    pass
                spent += time.perf_counter() - start
                if turn % every == 0:
                    sample(turn, spent / every, {})
                    spent = 0.0
        else:
            from anvil.tui.app import AnvilApp

            app = AnvilApp(root, runtime=runtime)
            async with app.run_test(size=(120, 40)) as pilot:
                deadline = time.monotonic() + 60
                while not app.started and time.monotonic() < deadline:
                    await pilot.pause(0.01)
                sample(0, 0.0, {"widgets": len(app.transcript.children), "nodes": len(app.screen.walk_children())})
                spent = 0.0
                for turn in range(1, turns + 1):
                    start = time.perf_counter()
                    app.send(f"turn {turn}: what does the handler compute?")
                    deadline = time.monotonic() + 30
                    while app.busy and time.monotonic() < deadline:
                        await asyncio.sleep(0.001)
                    if app.busy:
                        raise RuntimeError(f"turn {turn} did not finish within 30 s")
                    spent += time.perf_counter() - start
                    if turn % every == 0:
                        await pilot.pause()
                        sample(turn, spent / every, {"widgets": len(app.transcript.children),
                                                     "nodes": len(app.screen.walk_children())})
                        spent = 0.0
        runtime.session.close()
    return samples


def measure_growth(turns: int, every: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {}
    for kind in ("engine", "tui"):
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--turns", str(turns), "--every",
                              str(every)], capture_output=True, text=True, timeout=900, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"the {kind} run failed:\n{out.stderr[-3000:]}")
        runs[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    engine, tui = runs["engine"], runs["tui"]
    print(f"\ngrowth: {turns} scripted turns (read_file of {RESULT_LINES} lines + answer), RSS every {every} turns")
    print(f"  {'turn':>6} {'engine MB':>10} {'app MB':>8} {'app-engine':>11} {'engine ms/turn':>15} "
          f"{'app ms/turn':>12} {'entries':>8} {'all widgets':>12} {'history msgs':>13}")
    for e, t in zip(engine, tui, strict=True):
        print(f"  {int(e['turn']):>6} {e['rss']:>10.1f} {t['rss']:>8.1f} {t['rss'] - e['rss']:>11.1f} "
              f"{e['turn_ms']:>15.1f} {t['turn_ms']:>12.1f} {int(t['widgets']):>8} {int(t['nodes']):>12} "
              f"{int(t['history']):>13}")
    # Growth per 100 turns from the first sample at which the transcript is at its pruning limit: before it,
    # the app is filling the transcript up to its limit, which is bounded by design.
    from anvil.tui.transcript import MAX_ENTRIES, PRUNE_BATCH

    full = next((i for i, t in enumerate(tui) if t.get("widgets", 0) >= MAX_ENTRIES - PRUNE_BATCH), len(tui))
    if full >= len(tui) - 1:
        print(f"  RSS growth per 100 turns: not measured, the transcript reached its limit ({MAX_ENTRIES} entries) "
              "too late in this run (use more --turns)")
        return
    span = (tui[-1]["turn"] - tui[full]["turn"]) / 100

    def per_100(samples: list[dict[str, float]]) -> float:
        return (samples[-1]["rss"] - samples[full]["rss"]) / span

    print(f"  RSS growth per 100 turns once the transcript is pruned (turns {int(tui[full]['turn'])}-"
          f"{int(tui[-1]['turn'])}): app {per_100(tui):+.2f} MB, engine alone {per_100(engine):+.2f} MB (reference)"
          f"{'; a short window, rough: the full run measures 500 turns' if span < 2 else ''}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one resume run, 150 turns of growth")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--turns", type=int, help="turns of the growth run")
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--child", choices=["engine", "tui"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    turns = args.turns or (150 if args.quick else 600)
    if args.child:
        print(json.dumps(asyncio.run(grow(args.child, turns, args.every))))
        return 0
    if have_tmux():
        measure_resume(args.runs or (1 if args.quick else 3))
    measure_growth(turns, args.every if not args.quick else 50)
    return 0


if __name__ == "__main__":
    sys.exit(main())
