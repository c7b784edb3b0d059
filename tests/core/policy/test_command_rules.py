"""command_rules: pattern semantics, deny beats allow, first uncovered part, suggested patterns."""

from __future__ import annotations

import pytest

from anvil.core.policy.rules import (
    CommandRule,
    CommandRules,
    command_prefix,
    escape_word,
    pattern_matches,
    suggest_pattern,
    tool_rule_matches,
)
from anvil.core.policy.shell_parse import parse_command


def first(command: str):
    return parse_command(command).commands[0]


MATCHES = [
    ("git status", "git status", True),
    ("git status", "git status -s", False),
    ("git commit *", "git commit", True),  # `X *` also matches bare X
    ("git commit *", "git commit -m fix", True),
    ("git commit *", "git commitx", False),
    ("git push * --force *", "git push --force", True),  # a lone * is zero or more words anywhere
    ("git push * --force *", "git push origin main --force", True),
    ("git push * --force *", "git push --forced", False),
    ("pytest*", "pytest", True),
    ("pytest*", "pytest -x tests", True),
    ("pytest*", "pytest-watch", True),  # documented: prefer `pytest *`
    ("pytest *", "pytest-watch", False),
    ("npm run test*", "npm run test:unit", True),
    ("npm run test*", "npm run lint", False),
    ("* --help", "docker --help", True),
    ("make ?", "make a", True),
    ("[ -f * ]", "[ -f setup.py ]", True),  # [ is literal
    ("rm \\*", "rm *", True),  # \* is a literal star
    ("rm \\*", "rm x", False),
    ("  git   log  * ", "git log --oneline", True),  # whitespace in patterns is normalised
    ("echo *", "echo a\nb", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), MATCHES)
def test_pattern_matches(pattern: str, text: str, expected: bool) -> None:
    assert pattern_matches(pattern, text) is expected


def test_rules_match_the_normalised_command() -> None:
    rules = CommandRules([CommandRule("rm *")])
    for command in ('"rm" x', "\\rm x", "command rm x", "env NO_COLOR=1 rm x", "timeout 5 rm x", "CI=1 rm x",
                    "nice -n 5 nohup rm x", "xargs -0 rm < list"):
        assert rules.decide(command).action == "allow", command
    for command in ("env A=1 rm x", "FOO=1 rm x", "GIT_DIR=x rm x"):  # a prefix is part of what a rule matches
        assert rules.decide(command).action == "ask", command
    assert CommandRules([CommandRule("FOO=1 rm *")]).decide("env FOO=1 rm x").action == "allow"
    assert rules.decide("sudo rm x").action == "ask"  # privilege must be named
    assert rules.decide("/bin/rm x").action == "ask"  # allow is narrow: the path is not `rm`


def test_every_simple_command_must_be_allowed_on_its_own() -> None:
    rules = CommandRules.from_lists(allow={"project": ["git status", "echo *"]})
    assert rules.decide("git status").action == "allow"
    for sneaky in ("git status && rm -rf x", "git status; curl x | sh", "echo $(rm -rf x)", "echo `reboot`",
                   "git status\nrm x", "echo <(rm x)", "bash -c 'git status'", "echo x | sh"):
        d = rules.decide(sneaky)
        assert d.action == "ask", sneaky
        assert d.command is not None and d.command.words[0] != "echo"


def test_deny_beats_allow_in_every_scope_and_every_part() -> None:
    rules = CommandRules.from_lists(allow={"session": ["git *", "rm *"]}, deny={"user": ["git push *"]})
    d = rules.decide("git add . && git push origin main")
    assert d.action == "deny" and d.rule == CommandRule("git push *", "deny", "user")
    assert d.command is not None and d.command.text == "git push origin main"
    # even when a more specific allow exists
    rules.add("git push origin main", "allow", "session")
    assert rules.decide("git push origin main").action == "deny"


def test_deny_is_wide() -> None:
    rules = CommandRules([CommandRule("rm *", "deny", "user"), CommandRule("nice *", "deny", "project")])
    for command in ("rm x", "/bin/rm x", "sudo rm -rf x", "sudo -u bob nice rm x", "nice -n 5 ls",
                    "echo $(rm x)", "bash -c 'rm x'", "find . -exec rm {} +"):
        assert rules.decide(command).action == "deny", command


def test_ask_names_the_first_uncovered_part_and_a_pattern_for_it() -> None:
    rules = CommandRules.from_lists(allow={"user": ["cd *"]})
    d = rules.decide("cd app && npm run build && npm test")
    assert d.action == "ask"
    assert d.command is not None and d.command.text == "npm run build"
    assert d.suggested_pattern == "npm run build *"
    rules.add(d.suggested_pattern, "allow", "session")
    d = rules.decide("cd app && npm run build && npm test")
    assert d.command is not None and d.command.text == "npm test" and d.suggested_pattern == "npm test *"
    rules.add("npm test *")
    d = rules.decide("cd app && npm run build && npm test")
    assert d.action == "allow"
    assert [r.pattern for r in d.rules] == ["cd *", "npm run build *", "npm test *"]


def test_parse_failure_asks() -> None:
    d = CommandRules([CommandRule("echo *")]).decide('echo "oops')
    assert d.action == "ask" and d.error and d.command is None and d.suggested_pattern is None


def test_commands_that_run_nothing_need_no_rule() -> None:
    assert CommandRules().decide("FOO=1").action == "allow"
    assert CommandRules().decide("").action == "allow"
    assert CommandRules().decide("FOO=$(date)").action == "ask"  # but what they substitute does


SUGGESTIONS = [
    ("git status", "git status *"),
    ("git -C sub log --oneline", "git -C sub log *"),
    ("git stash pop", "git stash pop *"),
    ("git commit -m 'x y'", "git commit *"),
    ("npm test", "npm test *"),
    ("npm run test -- --watch", "npm run test *"),
    ("npm run build", "npm run build *"),
    ("pnpm --filter web run dev", "pnpm --filter web run dev *"),
    ("yarn add lodash", "yarn add *"),
    ("npx prettier --write .", "npx prettier *"),
    ("cargo +nightly build --release", "cargo +nightly build *"),
    ("cargo test", "cargo test *"),
    ("go test ./...", "go test *"),
    ("go mod tidy", "go mod tidy *"),
    ("docker compose up -d", "docker compose up *"),
    ("docker build -t x .", "docker build *"),
    ("kubectl -n prod get pods", "kubectl -n prod get *"),
    ("pip install -r requirements.txt", "pip install *"),
    ("uv run pytest -x", "uv run pytest *"),
    ("uv pip install x", "uv pip install *"),
    ("poetry run pytest", "poetry run pytest *"),
    ("make test", "make test *"),
    ("make -j4 build", "make -j4 build *"),
    ("make", "make *"),
    ("gh pr create --fill", "gh pr create *"),
    ("python -m pytest -q", "python -m pytest *"),
    ("python3 -u -m http.server 8000", "python3 -u -m http.server *"),
    ("python scripts/gen.py --out x", "python scripts/gen.py *"),
    ("python -c 'print(1)'", "python -c *"),
    ("node -e 'x'", "node -e *"),
    ("bash -lc 'make'", "bash -lc *"),
    ("bash scripts/ci.sh", "bash scripts/ci.sh *"),
    ("pytest tests/ -x", "pytest *"),
    ("ls", "ls *"),
    ("rm -rf build", "rm *"),
    ("./gradlew test", "./gradlew test *"),
    ("FOO=1 env BAR=2 timeout 5 make lint", "FOO=1 BAR=2 make lint *"),
    ("NODE_ENV=test npm test", "npm test *"),
    ("ls *.py", "ls *"),
    ("cat 'my file?.txt'", "cat *"),
    ("git --version", "git --version *"),
]


@pytest.mark.parametrize(("command", "expected"), SUGGESTIONS)
def test_suggest_pattern(command: str, expected: str) -> None:
    cmd = first(command)
    pattern = suggest_pattern(cmd)
    assert pattern == expected
    assert pattern_matches(pattern, cmd.normalized)
    assert pattern.strip("* ") and "&&" not in pattern


def test_suggest_pattern_keeps_risky_words_literal_and_escapes_wildcards() -> None:
    assert suggest_pattern(first("rm -rf build"), keep=["-rf"]) == "rm -rf *"
    assert suggest_pattern(first("git push origin main --force"), keep=["--force"]) == "git push * --force *"
    assert suggest_pattern(first("git push --force origin"), keep=["--force"]) == "git push --force *"
    assert suggest_pattern(first("echo x >> ~/.bashrc"), keep=["~/.bashrc"]) == "echo * ~/.bashrc *"
    assert suggest_pattern(first("npm run 'te*st'")) == "npm run te\\*st *"
    assert escape_word("a*b?c\\") == "a\\*b\\?c\\\\"
    with pytest.raises(ValueError):
        suggest_pattern(first("> out.txt"))


def test_command_prefix() -> None:
    assert command_prefix(("git", "-c", "a=b", "push", "origin")) == 4
    assert command_prefix(("sh",)) == 1
    assert command_prefix(()) == 0


def test_rule_validation_and_names() -> None:
    with pytest.raises(ValueError):
        CommandRule("  ")
    for everything in ("*", "* *", "?*"):
        with pytest.raises(ValueError):
            CommandRule(everything)
    assert CommandRule("*", "deny").pattern == "*"  # denying everything is allowed
    rule = CommandRule("git push --force *")
    assert rule.names("--force") and not rule.names("-f")
    assert not CommandRule("git push *").names("--force")
    assert CommandRule("rm -rf /tmp/*").names("/tmp/build")
    assert not CommandRule("rm -* *").names("-rf")  # a bare dash-and-star spells nothing out


def test_rule_bookkeeping() -> None:
    rules = CommandRules()
    rules.add("git log *", "allow", "project")
    rules.add("git  log *", "allow", "project")  # same rule once normalised
    rules.add("git push *", "deny", "user")
    assert rules.patterns("allow", "project") == ["git log *"]
    assert rules.patterns("deny", "user") == ["git push *"]
    assert rules.remove("git push *") and not rules.remove("git push *")
    assert rules.allow_rules_for(first("git log -1")) == (CommandRule("git log *", "allow", "project"),)
    rules.add("git log -1")
    assert [r.pattern for r in rules.allow_rules_for(first("git log -1"))] == ["git log -1", "git log *"]


TOOLS = [
    ("web_fetch", "web_fetch", True),
    ("web_fetch", "web_search", False),
    ("mcp__github__*", "mcp__github__create_issue", True),
    ("mcp__github__*", "mcp__gitlab__create_issue", False),
    ("mcp__*", "mcp__x__y", True),
]


@pytest.mark.parametrize(("pattern", "tool", "expected"), TOOLS)
def test_tool_rule_matches(pattern: str, tool: str, expected: bool) -> None:
    assert tool_rule_matches(pattern, tool) is expected
