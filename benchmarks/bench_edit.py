"""Budget: edit_file on a 10 MB file well under 300 ms; read_file of a 100k-line file.

Each figure is printed next to a reference measured in the same run on the same file, with the ratio:

- edit_file (exact match) vs a plain Python read + ``str.replace`` + write of the same file. The tool does
  more (the read-before-edit check, decoding with format detection, the uniqueness check, the checkpoint
  call, an fsync'd atomic write, the diff), so the ratio says what those cost.
- edit_file through the fallback chain (a typo that only the fuzzy step matches) and a failed edit (which
  searches for the closest region), for information: their budget is the same 300 ms.
- read_file (the first 2000 lines, numbered) vs a plain Python read + split + ``cat -n`` formatting.

Medians of several repetitions; the checkpoint store is the null one (the file store's first copy per turn
is a separate cost). ``--quick`` runs a 1 MB / 10k-line version as a smoke test. Exits 0 (non-zero only
if an edit takes an unexpected path, which would make its figure meaningless).

    python benchmarks/bench_edit.py
    python benchmarks/bench_edit.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from anvil.core.tools.base import ToolContext
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool

EDIT_BUDGET_MS = 300.0


def _python_file(target_bytes: int) -> tuple[str, int]:
    """Python-looking source of about ``target_bytes``, and its line count. Names are random so that, as
    in real code, a few lines are distinctive (the fuzzy step refuses near-duplicate blocks)."""
    generator = random.Random(20251123)
    lines = []
    size = i = 0
    while size < target_bytes:
        name, item = generator.randbytes(5).hex(), generator.randbytes(4).hex()
        line = f"    result_{name} = compute_value(item_{i}, factor={item}, label='entry {i}')  # step\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines), i


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def _time_async(action: Callable[[int], Awaitable[object]], reps: int) -> float:
    samples = []
    for rep in range(reps):
        start = time.perf_counter()
        await action(rep)
        samples.append(time.perf_counter() - start)
    return _median_ms(samples)


def _time_sync(action: Callable[[int], object], reps: int) -> float:
    samples = []
    for rep in range(reps):
        start = time.perf_counter()
        action(rep)
        samples.append(time.perf_counter() - start)
    return _median_ms(samples)


def _row(label: str, ms: float, reference_ms: float | None = None, budget_ms: float | None = None) -> None:
    text = f"  {label:<44} {ms:8.1f} ms"
    if reference_ms is not None:
        text += f"   ratio {ms / reference_ms:5.2f}x"
    if budget_ms is not None:
        text += f"   budget {budget_ms:.0f} ms: {'ok' if ms <= budget_ms else 'OVER'}"
    print(text)


async def bench_edit(root: Path, size: int, reps: int) -> None:
    source, line_count = _python_file(size)
    path = root / "big.py"
    path.write_text(source)
    ctx = ToolContext(root=root, data_dir=root / ".data")
    reader, editor = ReadFileTool(), EditFileTool()
    await reader.run(ReadFileArgs(path="big.py", limit=1), ctx)
    middle = line_count // 2
    spellings = (f"compute_value(item_{middle},", f"compute_value(item_{middle}, ")
    print(f"edit_file on {path.stat().st_size / 1e6:.1f} MB ({line_count:,} lines), median of {reps}")

    async def edit(rep: int) -> None:
        old, new = spellings if rep % 2 == 0 else spellings[::-1]
        await editor.run(EditFileArgs(path="big.py", old_string=old, new_string=new), ctx)

    def plain(rep: int) -> None:
        old, new = spellings if rep % 2 == 0 else spellings[::-1]
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    reference = _time_sync(plain, reps)
    path.write_text(source)
    await reader.run(ReadFileArgs(path="big.py", limit=1), ctx)
    exact = await _time_async(edit, reps)
    _row("plain read + replace + write (reference)", reference)
    _row("edit_file, exact match", exact, reference, EDIT_BUDGET_MS)

    block = source.splitlines()[middle:middle + 4]
    typo = "\n".join(block).replace("compute_value", "compute_valeu", 1)

    async def fuzzy(rep: int) -> None:
        result = await editor.run(EditFileArgs(path="big.py", old_string=typo,
                                               new_string=typo + "  # x" * (rep + 1)), ctx)
        assert result.data is not None and result.data["steps"] == ["fuzzy"], result.output[:200]
        path.write_text(source)
        ctx.record_read(path, path.stat(), hashlib.sha256(path.read_bytes()).hexdigest())

    async def failing(rep: int) -> None:
        try:
            await editor.run(EditFileArgs(path="big.py", old_string=f"no such line {rep}\nnor this one\nnor "
                                                                      "this", new_string="x"), ctx)
        except ToolError:
            return
        raise AssertionError("the edit that should find no match was applied")

    _row("edit_file, fuzzy fallback (whole chain)", await _time_async(fuzzy, max(3, reps // 2)), reference,
         EDIT_BUDGET_MS)
    _row("edit_file, no match (closest region search)", await _time_async(failing, max(3, reps // 2)),
         reference, EDIT_BUDGET_MS)


async def bench_read(root: Path, lines: int, reps: int) -> None:
    path = root / "long.py"
    path.write_text("".join(f"def function_{i}(argument):  return argument * {i}\n" for i in range(lines)))
    ctx = ToolContext(root=root, data_dir=root / ".data")
    reader = ReadFileTool()
    print(f"\nread_file of a {lines:,}-line file ({path.stat().st_size / 1e6:.1f} MB), first 2000 lines, "
          f"median of {reps}")

    def plain(_: int) -> str:
        shown = path.read_text(encoding="utf-8").splitlines()[:2000]
        return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(shown, 1))

    async def tool(_: int) -> None:
        await reader.run(ReadFileArgs(path="long.py"), ctx)

    reference = _time_sync(plain, reps)
    _row("plain read + split + number (reference)", reference)
    _row("read_file", await _time_async(tool, reps), reference)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small, fast smoke run")
    options = parser.parse_args()
    size, lines, reps = (1_000_000, 10_000, 5) if options.quick else (10_000_000, 100_000, 15)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory).resolve()
        asyncio.run(bench_edit(root, size, reps))
        asyncio.run(bench_read(root, lines, reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
