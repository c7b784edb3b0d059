"""How a risk row reads a command: where its words are looked for, what a rule must name, and the table's
own consistency. The behaviour of the real rows is covered by test_command_risk and the corpus."""

from __future__ import annotations

import pytest

from anvil.core.policy.risk_rows import (
    ANY,
    PROGRAM,
    ROWS,
    SUBCOMMAND,
    RiskRow,
    Words,
    anywhere,
    first_operand,
    operands,
    options,
    rows_for,
)


def match(row: RiskRow, command: str, sub_at: int | None = None) -> tuple[str, ...] | None:
    words = tuple(command.split())
    sub = words[sub_at] if sub_at is not None else ""
    after = words[sub_at + 1:] if sub_at is not None else ()
    return row.match(words[0], words[1:], sub, after)


@pytest.mark.parametrize(("words", "command", "found"), [
    (options("-f", letters="f"), "x -f a", ["-f"]),
    (options("-f", letters="f"), "x -xfz a", ["-xfz"]),  # a letter in a cluster of short options
    (options(letters="f"), "x --fast a", []),  # never inside a long option
    (options("-f"), "x -- -f", []),  # after -- it is an operand
    (operands(prefixes=("+",)), "x a +main -f", ["+main"]),
    (first_operand("drop"), "x -q drop y", ["drop"]),
    (first_operand("drop"), "x y drop", []),
    (anywhere("create"), "x -R r create", ["create"]),  # found past an option's value
    (anywhere("--privileged", prefixes=("/:",)), "x -v /:/host --privileged", ["/:/host", "--privileged"]),
])
def test_where_words_are_looked_for(words: Words, command: str, found: list[str]) -> None:
    assert words.find(tuple(command.split()[1:])) == found


def test_triggers_say_what_a_rule_must_name() -> None:
    flags = (options("--force", letters="f"),)
    assert match(RiskRow(("x",), "r", flags=flags), "x -f --force a") == ("-f", "--force")
    assert match(RiskRow(("x",), "r", ("go",), flags, trigger=SUBCOMMAND), "x go -f", 1) == ("go",)
    assert match(RiskRow(("x",), "r", flags=flags, trigger=PROGRAM), "/usr/bin/x -f") == ("/usr/bin/x",)
    assert match(RiskRow(("x",), "r", flags=flags, trigger="--force"), "x -f") == ("--force",)
    assert match(RiskRow(("x",), "r", flags=flags, level="hard_deny"), "x -f") == ()  # no rule covers it
    assert match(RiskRow(("x",), "r", flags=flags), "x a") is None
    assert match(RiskRow(("x",), "r"), "x a") == ()  # no flags: the program itself is the risk


def test_subcommand_rows_read_the_words_after_the_subcommand() -> None:
    row = RiskRow(("x",), "r", ("push",), (options("-f"),))
    assert match(row, "x push -f", 1) == ("-f",)
    assert match(row, "x -f push", 2) is None  # before the subcommand: not this row's business
    assert match(row, "x pull -f", 1) is None
    assert match(RiskRow(("x",), "r", (ANY,), (first_operand("prune"),)), "x system prune", 1) == ("prune",)
    assert match(RiskRow(("x",), "r", flags=(options("-f"),)), "x -f push", 2) == ("-f",)  # no subcommands: all


def test_requires_and_unless() -> None:
    row = RiskRow(("x",), "r", ("clean",), (options(letters="f"),), requires=(operands("all"),),
                  unless=(options("-n", "--dry-run"),))
    assert match(row, "x clean -f all", 1) == ("-f",)
    assert match(row, "x clean -f", 1) is None
    assert match(row, "x clean -fn all", 1) == ("-fn",)  # unless names exact words
    assert match(row, "x clean -f -n all", 1) is None


def test_rows_of_a_program_come_in_table_order_and_globs_match_names() -> None:
    assert rows_for("mkfs.ext4") == rows_for("mkfs") and rows_for("mkfs")[0].level == "hard_deny"
    assert [r.reason for r in rows_for("pip3.12")] == ["installs into the system Python"]
    assert rows_for("docker") == rows_for("podman")
    assert [r for r in ROWS if r.applies_to("npm")] == list(rows_for("npm"))
    assert rows_for("no-such-program") == ()


def test_the_table_is_consistent() -> None:
    for row in ROWS:
        assert row.programs and row.reason and row.reason == row.reason.strip(), row
        assert row.level in ("risky", "hard_deny"), row
        if row.trigger == SUBCOMMAND:
            assert row.subcommands and ANY not in row.subcommands, row  # a subcommand a rule can name
