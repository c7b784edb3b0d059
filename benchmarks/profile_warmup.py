"""What blocks the UI thread while anvil warms up: the longest stalls, per warm-up step, and in the first call.

Not a benchmark (run_all skips it): a diagnosis for bench_ready.py's "keys while warming up" figure. It
runs the app's warm-up steps (anvil/tui/warmup.py, in the app's order: themes, settings, runtime, then for a
litellm model litellm's dependencies, litellm with the preflight, the OpenAI client's modules, the
tokenizer) back to back in a thread, as the app does once a prompt has hurried them, while the main thread
stands in for the UI loop: it sleeps 1 ms at a time and records every wake-up that came late. A late
wake-up means the warm-up thread held the GIL; the warm-up thread's stack at the moment the main thread
gets it back shows what it was doing (sampled from the main thread, so it is the frame that just released
the GIL: the code after the long stretch, or inside it for imports).

The per-step table is what the staging works with: in the app a step starts only after a pause in typing,
and a key that comes while one runs can meet at most that step's longest stall.

``--first-call`` then runs one turn through the agent on this thread's event loop against the local
scripted server (tests/support/openai_server.py) and reports how long that loop was blocked: what the first
answer costs the UI thread. ``--skip client,tokenizer`` leaves steps out to see what they save there.

    python benchmarks/profile_warmup.py [--top 12] [--first-call] [--skip client,tokenizer]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
STALL = 0.02  # a late wake-up longer than this counts as a stall


def sample_stalls(thread: threading.Thread, done: threading.Event, current: list[str]
                  ) -> list[tuple[float, str, str, str]]:
    """Sleep 1 ms at a time until ``done``; each late wake-up as (gap, step, where, module)."""
    stalls: list[tuple[float, str, str, str]] = []
    last = time.perf_counter()
    while not done.is_set():
        step = current[0]  # the step running when the gap began (it may have ended by the wake-up)
        time.sleep(0.001)
        now = time.perf_counter()
        gap = now - last - 0.001
        if gap > STALL:
            frame = sys._current_frames().get(thread.ident or 0)
            stack = traceback.extract_stack(frame) if frame is not None else []
            ours = [f for f in stack if "importlib" not in f.filename]
            where = " > ".join(f"{Path(f.filename).name}:{f.lineno}" for f in ours[-3:])
            module = next((f.filename for f in reversed(stack) if "<frozen" not in f.filename), "?")
            stalls.append((gap, step, where, module))
        last = now
    return stalls


def warm_up(root: Path, flags: dict[str, Any], skip: set[str], current: list[str],
            spans: dict[str, float], out: dict[str, Any]) -> None:
    """The app's steps, in its order, one after the other (what ``AnvilApp.start_up`` runs when hurried)."""
    from anvil.tui import warmup
    from anvil.tui.startup import user_config_dir

    def step(name: str, func: Callable[[], Any]) -> Any:
        if name in skip:
            return None
        current[0] = name
        start = time.perf_counter()
        result = func()
        spans[name] = time.perf_counter() - start
        return result

    step("themes", partial(warmup.load_themes, user_config_dir() / "themes"))
    settings = step("settings", partial(warmup.load_settings, root, flags))
    runtime = step("runtime", partial(warmup.open_runtime, settings, root, resume=None, continue_latest=False,
                                      model=None))
    from anvil.facade import SessionFacade

    for name, func in warmup.model_steps(SessionFacade(runtime), preflight=True):
        problem = step(name, func)
        if isinstance(problem, str):
            out["problem"] = problem
    current[0] = "-"
    out["runtime"] = runtime


async def first_turn(runtime: Any) -> tuple[float, list[float]]:
    """One turn on this loop while a ticker records how late the loop let it run: (wall time, stalls)."""
    stalls: list[float] = []
    finished = asyncio.Event()

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while not finished.is_set():
            await asyncio.sleep(0.001)
            now = loop.time()
            if now - last - 0.001 > STALL:
                stalls.append(now - last - 0.001)
            last = now

    ticking = asyncio.create_task(ticker())
    start = time.perf_counter()
    async for _ in runtime.agent.run_turn("ping"):
        pass
    took = time.perf_counter() - start
    finished.set()
    await ticking
    return took, stalls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=12, help="stalls to show")
    parser.add_argument("--model", default="openai/scripted")
    parser.add_argument("--skip", default="", help="comma-separated warm-up steps to leave out, e.g. client,tokenizer")
    parser.add_argument("--first-call", action="store_true",
                        help="then run one turn against the local scripted server and report the loop's stalls")
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval() during the warm-up "
                        "(Python's default is 0.005 s), to see whether a shorter one helps")
    args = parser.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    skip = {s for s in args.skip.split(",") if s}
    sys.path.insert(0, str(REPO))
    from tests.support.openai_server import ScriptedOpenAIServer

    with tempfile.TemporaryDirectory(prefix="profile-warmup-") as tmp, \
            ScriptedOpenAIServer([{"text": "pong"}]) as server:
        os.environ.update(XDG_CONFIG_HOME=f"{tmp}/config", XDG_DATA_HOME=f"{tmp}/data",
                          OPENAI_API_KEY="sk-local-bench")
        root = Path(tmp)
        import textual.app  # noqa: F401  (imported before the first paint in the app: not part of the warm-up)

        import anvil.tui.app  # noqa: F401  (likewise)

        current, spans, out = ["-"], {}, {}
        done = threading.Event()
        thread = threading.Thread(target=lambda: (warm_up(root, {"model": args.model, "api_base": server.url},
                                                          skip, current, spans, out), done.set()), name="warm-up")
        start = time.perf_counter()
        thread.start()
        stalls = sample_stalls(thread, done, current)
        total = time.perf_counter() - start
        thread.join(10)
        turn = asyncio.run(first_turn(out["runtime"])) if args.first_call else None
    gaps = sorted(stalls, reverse=True)
    print(f"warm-up ({args.model}): {total * 1000:.0f} ms; main-thread stalls over {STALL * 1000:.0f} ms: "
          f"{len(stalls)}, together {sum(g[0] for g in stalls) * 1000:.0f} ms, "
          f"longest {gaps[0][0] * 1000 if gaps else 0:.0f} ms")
    by_step: dict[str, list[float]] = defaultdict(list)
    for gap, step, _, _ in stalls:
        by_step[step].append(gap)
    print("  step         time   stalls  together  longest")
    for name, took in spans.items():
        mine = by_step.get(name, [])
        print(f"  {name:<10} {took * 1000:6.0f} ms {len(mine):5d} {sum(mine) * 1000:7.0f} ms "
              f"{max(mine, default=0) * 1000:6.0f} ms")
    for gap, step, where, module in gaps[: args.top]:
        print(f"  {gap * 1000:6.1f} ms  [{step}]  {module.split('site-packages/')[-1]}  ({where})")
    by_package: Counter[str] = Counter()
    for gap, _, _, module in stalls:
        by_package[module.split("site-packages/")[-1].split("/")[0]] += gap
    print("stall time by package: " + ", ".join(f"{name} {s * 1000:.0f} ms" for name, s in by_package.most_common(6)))
    if out.get("problem"):
        print(f"preflight: {out['problem']}")
    if turn is not None:
        took, loop_stalls = turn
        print(f"first turn on the event loop{' (skipped: ' + ', '.join(sorted(skip)) + ')' if skip else ''}: "
              f"{took * 1000:.0f} ms; loop blocked over {STALL * 1000:.0f} ms: {len(loop_stalls)} times, "
              f"together {sum(loop_stalls) * 1000:.0f} ms, longest {max(loop_stalls, default=0) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
