"""Saving "always allow" rules: every rule already in the file stays, the header explains the file, any text
round-trips, and a file anvil cannot read is reported and left as it was."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from anvil.core.policy.rule_files import HEADER, RuleFileError, save_rule


def test_a_new_file_gets_the_header_and_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "permissions.toml"
    save_rule(path, "pytest *")
    text = path.read_text()
    assert text.startswith(HEADER)
    assert tomllib.loads(text) == {"allow": ["pytest *"], "deny": []}


def test_rules_already_in_the_file_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text('# my notes\nallow = ["git status"]\ndeny = ["rm -rf *"]\n')
    save_rule(path, "npm test *")
    save_rule(path, "git status")  # already there: not added twice
    save_rule(path, "curl *", "deny")
    assert tomllib.loads(path.read_text()) == {"allow": ["git status", "npm test *"], "deny": ["rm -rf *", "curl *"]}


@pytest.mark.parametrize("pattern", ['echo "quoted" \\*', "printf 'a\\tb'", "grep -P '\\d+' *", "echo ünïcode ✓",
                                     "echo \x1b[31m", 'web_fetch(domain:*.python.org)'])
def test_any_pattern_reads_back_exactly(tmp_path: Path, pattern: str) -> None:
    path = tmp_path / "permissions.toml"
    save_rule(path, pattern)
    assert tomllib.loads(path.read_text())["allow"] == [pattern]


@pytest.mark.parametrize("text", ["allow = [\n", 'allow = "git status"\n', "allow = [1, 2]\n"])
def test_a_file_anvil_cannot_read_is_reported_and_left_alone(tmp_path: Path, text: str) -> None:
    path = tmp_path / "permissions.toml"
    path.write_text(text)
    with pytest.raises(RuleFileError, match=str(path)):
        save_rule(path, "pytest *")
    assert path.read_text() == text
