"""The one-liners every front end shows, worded once."""

from __future__ import annotations

from pathlib import Path

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalDecision,
    ApprovalRequested,
    CompactionFinished,
    CompactionStarted,
    ErrorEvent,
    Notice,
    Retrying,
    TextDelta,
    TurnEnded,
)
from anvil.frontend.lines import answered_text, cwd_text, decision_text, describe, scope_choices, shown_path

ROOT = Path("/srv/app")
FILES = {"project": "/srv/app/.anvil/permissions.toml", "user": "/etc/xdg/anvil/permissions.toml"}


def request(**fields: object) -> ApprovalRequested:
    return ApprovalRequested("c1", "run_command", {"command": "touch x"}, "Running touch", **fields)  # type: ignore[arg-type]


def test_events_become_one_line_each() -> None:
    retry = describe(Retrying(1, 4, 2.0, "The provider is busy"))
    assert retry is not None and (retry.kind, retry.text) == (
        "retry", "The provider is busy; retrying in 2.0s (attempt 2 of 4)")
    error = describe(ErrorEvent("Rate limited", retryable=True))
    assert error is not None and error.kind == "error" and error.text == "Rate limited"  # the message says it all
    started = describe(CompactionStarted(150_000, "threshold"))
    assert started is not None and started.text == "Compacting the conversation (150,000 tokens, threshold)…"
    finished = describe(CompactionFinished(150_000, 41_000, 2))
    assert finished is not None and finished.text == "Compacted: 150,000 → 41,000 tokens (older messages summarised)."
    failed = describe(CompactionFinished(150_000, 150_000, 0, ok=False, message="the summary call failed"))
    assert failed is not None and (failed.kind, failed.text) == ("error", "Compaction failed: the summary call failed")
    notice = describe(Notice("MCP server x failed"))
    assert notice is not None and (notice.kind, notice.text) == ("notice", "MCP server x failed")
    interrupted = describe(TurnEnded(1, "interrupted", 1))
    assert interrupted is not None and interrupted.kind == "interrupted"
    stuck = describe(TurnEnded(1, "stuck", 3, "The model repeated the same call."))
    assert stuck is not None and (stuck.kind, stuck.text) == ("error", "The model repeated the same call.")
    assert describe(TurnEnded(1, "done", 1)) is None and describe(TextDelta("hi")) is None


def test_decisions_taken_without_the_person_stay_visible() -> None:
    assert answered_text(ApprovalAnswered("c", "run_command", True, "git status")) == "allowed by git status"
    refused = answered_text(ApprovalAnswered("c", "run_command", False, "hard-deny", "Refused: it wipes the disk."))
    assert refused == "refused by hard-deny: Refused: it wipes the disk."
    assert answered_text(ApprovalAnswered("c", "run_command", True, "user")) is None


def test_scopes_name_the_files_the_request_carries() -> None:
    choices = scope_choices(request(rule_files=FILES), ROOT)
    assert [(c.key, c.scope) for c in choices] == [("s", "session"), ("p", "project"), ("e", "user")]
    assert [c.text for c in choices] == ["this session only: forgotten when anvil exits",
                                         "this project: saved in .anvil/permissions.toml",
                                         "everywhere: saved in /etc/xdg/anvil/permissions.toml"]
    # a policy that saves nowhere: no file is made up
    assert [c.text for c in scope_choices(request(), ROOT)][1:] == ["this project", "everywhere"]


def test_the_answer_said_back_names_the_rule_and_its_file() -> None:
    event = request(rule_files=FILES, suggested_pattern="touch *")
    always = ApprovalDecision(True, remember="project", pattern="touch *")
    assert decision_text(always, event, ROOT) == (
        "always allowed: `touch *` for this project (saved in .anvil/permissions.toml)")
    assert decision_text(ApprovalDecision(True), event, ROOT) == "allowed once"
    assert decision_text(ApprovalDecision(False, "use make"), event, ROOT) == "denied with your message: use make"
    assert decision_text(ApprovalDecision(False, by="interrupt"), event, ROOT) == "interrupted"


def test_where_a_command_runs_is_the_directory_the_policy_evaluated() -> None:
    assert cwd_text(request(cwd="/srv/app/sub")) == "in /srv/app/sub"
    assert cwd_text(request(cwd=str(Path.home() / "src" / "app"))) == "in ~/src/app"
    assert cwd_text(request()) is None
    user_rules = Path.home() / ".config" / "anvil" / "permissions.toml"
    assert shown_path(user_rules, ROOT) == "~/.config/anvil/permissions.toml"
