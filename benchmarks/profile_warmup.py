"""What blocks the UI thread while anvil warms up: the longest stalls and what the warm-up thread was doing.

Not a benchmark (run_all skips it): a diagnosis for bench_ready.py's "keys while warming up" figure. It
runs the app's start-up work (anvil/tui/app.py ``AnvilApp._build_runtime``: settings, ``open_runtime``,
the model's preflight, which imports litellm) in a thread, exactly as the app does after its first paint,
while the main thread stands in for the UI loop: it sleeps 1 ms at a time and records every wake-up that
came late. A late wake-up means the warm-up thread held the GIL; the warm-up thread's stack at the moment
the main thread gets it back shows what it was doing (sampled from the main thread, so it is the frame
that just released the GIL: the code after the long stretch, or inside it for imports).

    python benchmarks/profile_warmup.py [--top 12]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=12, help="stalls to show")
    parser.add_argument("--model", default="openai/scripted")
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval() during the warm-up "
                        "(Python's default is 0.005 s), to see whether a shorter one helps")
    args = parser.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    with tempfile.TemporaryDirectory(prefix="profile-warmup-") as tmp:
        os.environ.update(XDG_CONFIG_HOME=f"{tmp}/config", XDG_DATA_HOME=f"{tmp}/data",
                          OPENAI_API_KEY="sk-local-bench")
        root = Path(tmp)
        import textual.app  # noqa: F401  (imported before the first paint in the app: not part of the warm-up)

        from anvil.tui.app import AnvilApp

        app = AnvilApp(root, flags={"model": args.model, "api_base": "http://127.0.0.1:9/v1"})
        done = threading.Event()
        warm_up = threading.Thread(target=lambda: (app._build_runtime(), done.set()), name="warm-up")
        stalls: list[tuple[float, str, str]] = []
        start = time.perf_counter()
        warm_up.start()
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gap = now - last - 0.001
            if gap > 0.02:
                frame = sys._current_frames().get(warm_up.ident or 0)
                stack = traceback.extract_stack(frame) if frame is not None else []
                ours = [f for f in stack if "importlib" not in f.filename]
                where = " > ".join(f"{Path(f.filename).name}:{f.lineno}" for f in ours[-3:])
                module = next((f.filename for f in reversed(stack) if "<frozen" not in f.filename), "?")
                stalls.append((gap, where, module))
            last = now
        total = time.perf_counter() - start
        warm_up.join(10)
    gaps = sorted(stalls, reverse=True)
    print(f"warm-up ({args.model}): {total * 1000:.0f} ms; main-thread stalls over 20 ms: {len(stalls)}, "
          f"together {sum(g for g, _, _ in stalls) * 1000:.0f} ms, longest {gaps[0][0] * 1000 if gaps else 0:.0f} ms")
    for gap, where, module in gaps[: args.top]:
        print(f"  {gap * 1000:6.1f} ms  {module.split('site-packages/')[-1]}  ({where})")
    by_package = Counter()
    for gap, _, module in stalls:
        by_package[module.split("site-packages/")[-1].split("/")[0]] += gap
    print("stall time by package: " + ", ".join(f"{name} {ms * 1000:.0f} ms" for name, ms in by_package.most_common(6)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
