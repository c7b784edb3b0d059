"""The pieces behind the hidden-code checks: what the parser notes, which arithmetic is provably harmless, which
environment settings run code, links on disk, fork-bomb shapes, kills of everything, plugin options."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.core.policy.command_policy import evaluate_command
from anvil.core.policy.command_risk import classify
from anvil.core.policy.env_vars import code_variable, is_inert
from anvil.core.policy.risk_options import option_risks
from anvil.core.policy.risk_processes import fork_bombs, kills_everything
from anvil.core.policy.rules import CommandRules
from anvil.core.policy.shell_expansions import INDIRECT, PROMPT, arithmetic_names, parameter_expansion
from anvil.core.policy.shell_parse import parse_command

ROOT, HOME = Path("/home/dev/proj"), Path("/home/dev")


@pytest.mark.parametrize(("body", "exprs", "late"), [
    ("x", [], []),
    ("#x", [], []),
    ("a[i+1]", ["i+1"], []),
    ("a[@]", [], []),
    ("y:x", ["x"], []),
    ("y:0:n", ["0:n"], []),
    ("y: -1", [" -1"], []),
    ("x:-default", [], []),
    ("x//a/b", [], []),
    ("!x", [], [INDIRECT]),
    ("!prefix*", [], []),
    ("!a[@]", [], []),
    ("x@P", [], [PROMPT]),
    ("x@Q", [], []),
    ("a[$(cmd)]:-x", ["$(cmd)"], []),
])
def test_parameter_expansions_say_what_bash_evaluates(body: str, exprs: list[str], late: list[str]) -> None:
    assert parameter_expansion(body) == (exprs, late)


@pytest.mark.parametrize(("expr", "names"), [
    ("1 + 2", set()),
    ("16#ff + 0x1F + 2#101", set()),
    ("i < 3", {"i"}),
    ("$x + ${y} - ${#z}", {"x", "y"}),
    ("a[i] * RANDOM + $#", {"a", "i"}),
    ("$(cat n)", None),
    ("`cat n`", None),
    ("${x:-1}", None),
])
def test_arithmetic_names(expr: str, names: set[str] | None) -> None:
    assert arithmetic_names(expr) == names


def test_the_parser_notes_arithmetic_and_late_evaluation() -> None:
    cmds = parse_command("(( n > 1 )) && echo ${a[i]} $((j)) ${!k} \"${v@P}\"").commands
    assert cmds[0].words == () and cmds[0].arith == (" n > 1 ",)
    assert cmds[1].arith == ("i", "j") and cmds[1].late == (INDIRECT, PROMPT)
    assert parse_command("echo '$((x)) ${!y}'").commands[0].arith == ()  # single quotes: only text


def test_code_strings_are_read_and_those_built_at_run_time_are_noted() -> None:
    parsed = parse_command("trap 'rm -f lock' EXIT; alias ll='ls -la'; bind -x '\"\\C-t\": date'")
    assert [c.words for c in parsed.commands if c.origin != "command"] == [("rm", "-f", "lock"), ("ls", "-la"),
                                                                          ("date",)]
    assert parse_command("bash -c 'echo $x'").commands[0].late == ()
    assert parse_command('bash -c "echo $x"').commands[0].late == ("runs shell code built at run time (shell -c)",)
    assert parse_command('trap "rm $f" EXIT').commands[0].late


def test_functions_background_and_loops_are_recorded() -> None:
    parsed = parse_command("f() { g | h & }; for i in a b; do f; done")
    body = [c for c in parsed.commands if c.function == "f"]
    assert [c.words for c in body] == [("g",), ("h",)] and all(c.background for c in body)
    assert parsed.loop_vars == ("i",)
    fallback = parse_command("function f { x & y; }; select s in a; do f; done")
    assert [(c.words, c.function, c.background) for c in fallback.commands][:2] == [(("x",), "f", True),
                                                                                   (("y",), "f", False)]
    assert fallback.loop_vars == ("s",)


@pytest.mark.parametrize("source", [
    "cat <<EOF\\\nEOF\nbody\nEOF", "cat <<EOF\nno end", "cat <<$X\nbody\n$X", "echo $(cat <<EOF)\nbody\nEOF",
])
def test_here_documents_that_cannot_be_delimited_for_sure_fail(source: str) -> None:
    assert not parse_command(source).ok


def test_case_pattern_substitutions_run() -> None:
    words = [c.words for c in parse_command("case $x in a|$(evil)|b) echo;; (c|`bad`) :;; esac").commands]
    assert ("evil",) in words and ("bad",) in words


@pytest.mark.parametrize(("assignment", "inert", "runs_code"), [
    ("NODE_ENV=test", True, False), ("NO_COLOR=1", True, False), ("GIT_PAGER=cat", True, False),
    ("GIT_PAGER=./x", False, True), ("GIT_DIR=x", False, True), ("GIT_CONFIG_KEY_0=core.pager", False, True),
    ("GIT_AUTHOR_NAME=me", False, False), ("LD_PRELOAD=x.so", False, True), ("DYLD_INSERT_LIBRARIES=x", False, True),
    ("PYTHONPATH=src", False, True), ("PS4=$(x)", False, True), ("npm_config_script_shell=x", False, True),
    ("PIP_INDEX_URL=x", False, True), ("PIP_NO_CACHE_DIR=1", False, False), ("FOO=1", False, False),
    ("CARGO_TARGET_X_RUNNER=x", False, True), ("CARGO_TARGET_DIR=x", False, False),
])
def test_environment_tables(assignment: str, inert: bool, runs_code: bool) -> None:
    assert is_inert(assignment) is inert
    assert (code_variable(assignment) is not None) is runs_code


def test_a_code_variable_needs_a_rule_that_spells_it_out() -> None:
    for pattern in ("git status *", "GIT_DIR=* git status *", "* git status *", "GIT_DIR=/tmp/* git *"):
        verdict = evaluate_command("GIT_DIR=/tmp/x git status", CommandRules.from_lists(allow={"user": [pattern]}),
                                   ROOT, HOME)
        assert verdict.action == "ask", pattern
    exact = CommandRules.from_lists(allow={"user": ["GIT_DIR=/tmp/x git status *"]})
    assert evaluate_command("GIT_DIR=/tmp/x git status -s", exact, ROOT, HOME).action == "allow"
    assert evaluate_command("GIT_DIR=/tmp/y git status", exact, ROOT, HOME).action == "ask"


@pytest.mark.parametrize(("source", "bomb"), [
    (":(){ :|:& };:", True), ("f(){ f & f; }; f", True), ("a(){ b; }; b(){ a | cat; }; a", True),
    ("f(){ echo $(f); }; f", True), ("f(){ f; }; f", False), ("f(){ g & }; g(){ echo; }; f", False),
    ("retry(){ make || retry; }; retry", False), ("f(){ echo hi; }; f | cat", False),
])
def test_fork_bombs_by_structure(source: str, bomb: bool) -> None:
    assert bool(fork_bombs(parse_command(source))) is bomb


@pytest.mark.parametrize(("command", "everything"), [
    ("kill -9 -1", True), ("kill -- -1", True), ("kill -s KILL -1", True), ("kill -n 9 -1", True),
    ("kill -HUP 12 -1", True), ("kill -1", False), ("kill -9 1234", False), ("kill -l", False),
    ("pkill -u bob", True), ("pkill -u bob node", False), ("pkill -f .", True), ("pkill '.*'", True),
    ("pkill node", False), ("killall -u bob", True), ("killall node", False), ("killall -r .", True),
])
def test_kills_of_everything(command: str, everything: bool) -> None:
    words = tuple(command.replace("'", "").split())
    assert kills_everything(words, words[0]) is everything


@pytest.mark.parametrize(("command", "triggers"), [
    ("pytest -p xdist", [("-p", "xdist")]), ("pytest -pxdist", [("-pxdist",)]), ("pytest -p no:cov", []),
    ("python -m pytest -o addopts=-pevil", [("-o", "addopts=-pevil")]), ("pytest -q", []),
    ("git -c core.fsmonitor=x status", [("core.fsmonitor=x",)]), ("git -c user.name=me commit", []),
    ("git config core.hooksPath hooks", [("core.hooksPath",)]), ("git config user.name me", []),
    ("npm test --script-shell=./x", [("--script-shell=./x",)]), ("cargo build --config x=1", [("--config", "x=1")]),
    ("make test SHELL=./x", [("SHELL=./x",)]), ("make test CC=gcc", []),
])
def test_options_that_load_other_code(command: str, triggers: list[tuple[str, ...]]) -> None:
    from anvil.core.policy.rules import subcommand_index

    words = tuple(command.split())
    assert [t for _, t in option_risks(words, subcommand_index(words))] == triggers


def test_a_delete_through_a_link_on_disk_that_points_out_of_the_project(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / "build").mkdir(parents=True)
    (root / "up").symlink_to("/srv/anvil-test-missing")  # dangling is enough: only where it points matters
    (root / "etc").symlink_to("/etc")
    (root / "out").symlink_to(root / "build")
    rules = CommandRules.from_lists(allow={"user": ["rm -rf *"]})
    verdict = evaluate_command("rm -rf up/*", rules, root, home)
    assert verdict.action == "ask"
    assert any("through a symbolic link that points outside the project" in r for r in verdict.reasons)
    assert evaluate_command("rm -rf up/*", rules, root, home, auto_approve=True).action == "deny"
    assert evaluate_command("rm -rf etc/", rules, root, home).by == "hard-deny"
    assert evaluate_command("rm -rf out/*", rules, root, home).action == "allow"  # stays inside the project
    assert evaluate_command("rm -rf up", rules, root, home).action == "allow"  # removes the link only


def test_values_the_command_gives_its_variables_make_a_delete_unthinkable() -> None:
    assert classify("x=/; rm -rf $x", ROOT, HOME).level == "hard_deny"
    assert classify("export T=~; rm -rf \"$T\"/*", ROOT, HOME).level == "hard_deny"
    assert classify("x=build; rm -rf $x", ROOT, HOME).level == "unattended_deny"  # x may still be something else


def test_quirks_that_hid_a_risk_are_gone() -> None:
    rules = CommandRules.from_lists(allow={"user": ["docker run prune *", "gh release *"]})
    privileged = evaluate_command("docker run prune --privileged", rules, ROOT, HOME)
    assert privileged.action == "ask" and any("access to the host" in r for r in privileged.reasons)
    release = evaluate_command("gh release -R me/app create v1", rules, ROOT, HOME)
    assert release.action == "ask" and any("publishes a package" in r for r in release.reasons)
