"""Startup cost: `anvil --version` and `anvil --help` against `python -c pass`, measured in the same run.

Budget (DESIGN.md): within 1.5x of `python -c pass`. Run: python benchmarks/bench_startup.py [--quick]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def anvil_script() -> str:
    beside = Path(sys.executable).with_name("anvil")
    return str(beside) if beside.exists() else (shutil.which("anvil") or "anvil")


def median_ms(command: list[str], runs: int) -> float:
    subprocess.run(command, capture_output=True, check=True)  # warm the OS file cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    runs = 5 if "--quick" in sys.argv else 30
    anvil = anvil_script()
    reference = median_ms([sys.executable, "-c", "pass"], runs)
    print(f"startup, median of {runs} runs ({sys.platform}, Python {sys.version.split()[0]})")
    print(f"  python -c pass      {reference:7.1f} ms  (reference)")
    for label, args in (("anvil --version", ["--version"]), ("anvil --help", ["--help"])):
        value = median_ms([anvil, *args], runs)
        verdict = "ok" if value <= 1.5 * reference else "OVER BUDGET"
        print(f"  {label:<18}  {value:7.1f} ms  ratio {value / reference:4.2f}x  (budget 1.5x: {verdict})")


if __name__ == "__main__":
    main()
