"""Shared fixtures: every test runs with its own config and data directories, and never a real provider."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

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


def anvil_command(*args: str) -> list[str]:
    """The installed CLI, run with this interpreter (no PATH assumptions)."""
    return [sys.executable, "-m", "anvil.cli", *args]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(LIVE_KEYS.values()):
        return
    skip = pytest.mark.skip(reason="live: set ANTHROPIC_API_KEY or OPENAI_API_KEY to call a real provider")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)
