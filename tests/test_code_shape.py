"""The shape the project agreed on (DESIGN.md, "Style we follow"): functions a reader can hold in mind and small
modules. radon measures cyclomatic complexity the same way the review did; this keeps the figures from creeping
back up."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

import anvil

PACKAGE = Path(anvil.__file__).parent
MAX_COMPLEXITY = 25
MAX_LINES = 420  # "under ~400": a little slack, never a second home for a module that should be split


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_function_is_more_complex_than_the_budget() -> None:
    over = [f"{path.relative_to(PACKAGE)}:{block.lineno} {block.fullname} ({block.complexity})"
            for path in sources() for block in cc_visit(path.read_text(encoding="utf-8"))
            if block.complexity > MAX_COMPLEXITY]
    assert not over, "split these into steps: " + ", ".join(over)


def test_no_module_is_longer_than_the_budget() -> None:
    over = [f"{path.relative_to(PACKAGE)} ({n} lines)" for path in sources()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not over, "split these by responsibility: " + ", ".join(over)
