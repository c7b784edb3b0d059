"""The import contracts in pyproject.toml catch what they are there for.

Each test copies the package, adds one import that breaks the architecture, runs ``lint-imports`` on the
copy and checks the report names that import. Comparing against the report for an untouched copy keeps
these tests about the contracts themselves, whatever else the tree holds today.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(tree: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # ahead of the editable install's finder
    done = subprocess.run([sys.executable, "-c", LINT, "--no-cache", "--no-logo"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("pristine")
    shutil.copytree(REPO / "anvil", tree / "anvil", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tree)
    return tree


@pytest.fixture(scope="module")
def pristine_report(pristine: Path) -> str:
    return lint_imports(pristine)[1]


def with_added_import(pristine: Path, tmp_path: Path, module: str, code: str) -> tuple[int, str]:
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree)
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + code, encoding="utf-8")
    return lint_imports(tree)


def test_the_copy_is_what_lint_imports_analyses(pristine_report: str) -> None:
    assert "Contracts:" in pristine_report and "Module 'anvil" not in pristine_report, pristine_report


def test_a_cycle_hidden_in_a_function_is_reported(pristine: Path, pristine_report: str, tmp_path: Path) -> None:
    code = "def _agent():\n    from anvil.core.loop.agent import Agent\n    return Agent\n"
    status, report = with_added_import(pristine, tmp_path, "anvil.core.policy.approval", code)
    assert status != 0
    assert "anvil.core.policy.approval -> anvil.core.loop.agent" not in pristine_report
    assert "anvil.core.policy.approval -> anvil.core.loop.agent" in report  # the layers contract
    assert ".policy -> .loop" in report or ".loop -> .policy" in report  # the cycle contract


def test_the_core_importing_the_settings_layer_is_reported(pristine: Path, pristine_report: str,
                                                           tmp_path: Path) -> None:
    code = "def _settings():\n    from anvil.config import Settings\n    return Settings\n"
    status, report = with_added_import(pristine, tmp_path, "anvil.core.session.store", code)
    assert status != 0
    assert "anvil.core.session.store -> anvil.config" not in pristine_report
    assert "anvil.core.session.store -> anvil.config" in report


def test_a_type_checking_import_of_a_front_end_counts(pristine: Path, pristine_report: str, tmp_path: Path) -> None:
    code = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from anvil.tui.app import AnvilApp\n"
    status, report = with_added_import(pristine, tmp_path, "anvil.core.events", code)
    assert status != 0
    assert "anvil.core.events -> anvil.tui.app" not in pristine_report
    assert "anvil.core.events -> anvil.tui.app" in report


def test_front_ends_importing_each_other_is_reported(pristine: Path, pristine_report: str, tmp_path: Path) -> None:
    code = "def _repl():\n    from anvil.plain import repl\n    return repl\n"
    status, report = with_added_import(pristine, tmp_path, "anvil.headless", code)
    assert status != 0
    assert "anvil.headless -> anvil.plain.repl" not in pristine_report
    assert "anvil.headless -> anvil.plain.repl" in report
