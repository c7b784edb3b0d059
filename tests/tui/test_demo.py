"""`anvil --demo` ends its turn with a real compaction, whatever the machine.

The demo's /compact used to depend on how long the conversation came out. Where pytest was not installed (a plain
`pip install anvil`), the two test runs printed one short error each; the whole conversation then fitted in the
share of the window that compaction keeps verbatim, and /compact said there was nothing older to summarise. The
demo project's tests now run with the standard library's unittest, so they run everywhere. These tests play the
demo's script through the engine, as the app does, with this environment's interpreter, with a bare one (no
site-packages, like a fresh install), and in a window far bigger than the demo's own.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from anvil.config import Settings
from anvil.core.context.snapshot import is_snapshot
from anvil.core.events import CompactionFinished, CompactionStarted, ContextUsage, ToolResultEvent
from anvil.runtime import open_runtime
from anvil.tui import demo


def bare_python(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`python` as in a fresh installation: this interpreter without its site-packages (no pytest)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    python = bindir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(("bare", "window"), [(False, None), (True, None), (False, 200_000)],
                         ids=["dev-env", "bare-python", "big-window"])
async def test_the_demo_turn_ends_in_a_real_compaction(bare: bool, window: int | None,
                                                       monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the demo's copy lands in the test's directory
    root = demo.prepare_demo_project()
    monkeypatch.chdir(root)
    for name in ("PATH", "PYTHONDONTWRITEBYTECODE"):  # demo_environment sets them: restored after the test
        monkeypatch.setenv(name, os.environ.get(name, "1"))
    demo.demo_environment()
    if bare:
        bare_python(monkeypatch, tmp_path)
    model = demo.demo_model()
    model.delay = 0
    if window is not None:
        model.window = window
    runtime = open_runtime(Settings(model="scripted", auto_approve=True), root, model=model)
    agent = runtime.agent
    try:
        events = [event async for event in agent.run_turn(demo.DEMO_PROMPT)]
        runs = [e.output for e in events if isinstance(e, ToolResultEvent) and e.name == "run_command"]
        # The tests really ran: the case test fails first, and after the fix the suite passes.
        assert len(runs) == 2, runs
        assert "FAILED (failures=1)" in runs[0] and "test_counts_are_case_insensitive" in runs[0]
        assert "Ran 3 tests" in runs[1] and "\nOK" in runs[1]
        assert not any(isinstance(e, CompactionStarted) for e in events)  # the script's turns stay in order
        peak = max(e.fraction for e in events if isinstance(e, ContextUsage))
        if window is None:
            assert 0.5 < peak < 0.8  # the gauge rises, with room below the automatic threshold (0.85)

        finished = [e async for e in agent.compact() if isinstance(e, CompactionFinished)]
        assert len(finished) == 1
        done = finished[0]
        assert done.ok and done.tier == 2, done.message  # older messages summarised, not "nothing older yet"
        assert done.tokens_after < done.tokens_before - 500
        assert is_snapshot(agent.messages[1]) and demo.DEMO_PROMPT in agent.messages[1]["content"]
        assert model.remaining == 0  # the script's last turn was the summary
    finally:
        await runtime.close()
