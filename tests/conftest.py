"""Shared fixtures: every test runs with its own config and data directories, and never a real provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import ScriptedOpenAIServer

REPO = Path(__file__).resolve().parent.parent

# Keys a developer may have exported must not reach code under test (live tests read them first).
LIVE_KEYS = {k: os.environ.get(k) for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    for name in list(os.environ):
        if name.startswith("ANVIL_") or name in LIVE_KEYS:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANVIL_ENGINE", "off")  # no test's `anvil` starts a background engine unless it asks for one
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n\nA tiny project.\n")
    return root


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


#: Starts the scripted server in its own process: ``start(turns, chunk_delay=0.0)`` returns its URL.
StartServer = Callable[..., str]


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[StartServer]:
    """The scripted OpenAI-compatible server as a separate process, for tests that run anvil in a terminal.

    ``chunk_delay`` (seconds between streamed chunks) slows a long answer down enough to interrupt it.
    """
    procs: list[subprocess.Popen[str]] = []

    def start(turns: list[dict[str, Any]], chunk_delay: float = 0.0) -> str:
        script = tmp_path / f"turns-{len(procs)}.json"
        script.write_text(json.dumps(turns))
        proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "openai_server.py"), str(script),
                                 str(chunk_delay)], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        return proc.stdout.readline().strip()  # the server prints its URL once it listens

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def anvil_command(*args: str) -> list[str]:
    """The installed CLI, run with this interpreter (no PATH assumptions)."""
    return [sys.executable, "-m", "anvil.cli", *args]


#: Modules whose tests drive real terminals (tmux) or whole anvil processes, end to end: marked ``slow``, so
#: ``pytest -m "not slow"`` is the quick pass while working. The plain ``pytest`` (and CI) runs everything.
SLOW_MODULES = (
    "tests/tui/test_tmux_e2e.py", "tests/tui/test_signal_exit_tmux.py", "tests/plain/test_plain_tmux.py",
    "tests/test_tools_e2e.py",
    "tests/test_patch_e2e.py", "tests/test_policy_attacks_e2e.py", "tests/test_claude_hooks_e2e.py",
    "tests/test_headless.py", "tests/test_headless_new_user.py", "tests/test_headless_stream_input.py",
    "tests/test_trust_headless.py", "tests/test_sandbox_headless.py", "tests/test_mcp_headless.py",
    "tests/test_reliability.py", "tests/acp/test_acp_clients.py", "tests/test_headless_signals.py",
    "tests/engine/test_engine.py", "tests/engine/test_engine_landlock.py",
)
#: Single tests elsewhere that start whole anvil processes (20 s and more each in a full run on 2 cores).
SLOW_TESTS = (
    "tests/core/model/test_anthropic.py::test_resumed_thinking_goes_back_after_continue",
    "tests/acp/test_acp_session.py::test_load_replays_the_session",
    "tests/core/policy/test_protected_writes.py::test_headless_cli_refuses_and_tells_the_person",
    "tests/core/loop/test_wiring.py::test_headless_plan_mode_prints_the_plan",
    "tests/test_project_root.py::test_anvil_sessions_from_a_subdirectory_lists_the_projects_sessions",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    root = Path(str(config.rootpath))
    for item in items:
        if Path(str(item.path)).relative_to(root).as_posix() in SLOW_MODULES or item.nodeid in SLOW_TESTS:
            item.add_marker(slow)
    if any(LIVE_KEYS.values()):
        return
    skip = pytest.mark.skip(reason="live: set ANTHROPIC_API_KEY or OPENAI_API_KEY to call a real provider")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)
