"""Rules for tools other than run_command, through the policy's real evaluate path: a rule covers the tool it
names and, when it names a subject (``web_fetch(domain:x)``), only calls with that subject."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.tools.base import Tool, ToolContext
from anvil.core.tools.shell.shell_tools import JobIdArgs, KillCommand
from anvil.core.tools.shell.test_runner import RunTests, RunTestsArgs
from anvil.core.tools.web.web_tools import WebFetch, WebFetchArgs


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(root=project, data_dir=tmp_path / "data")


def policy(allow: Sequence[str] = (), deny: Sequence[str] = (), auto_approve: bool = False) -> ApprovalPolicy:
    return ApprovalPolicy(auto_approve, rule_lists={"project": (list(allow), list(deny))})


def fetch(ctx: ToolContext, policy: ApprovalPolicy, url: str) -> tuple[str, str]:
    verdict = policy.evaluate(WebFetch(), WebFetchArgs(url=url), ctx)
    return verdict.action, verdict.by


def test_a_domain_rule_allows_that_domain_and_no_other(ctx: ToolContext) -> None:
    rules = policy(["web_fetch(domain:a.example)"])
    assert fetch(ctx, rules, "https://a.example/docs") == ("allow", "web_fetch(domain:a.example)")
    assert fetch(ctx, rules, "https://A.Example/") == ("allow", "web_fetch(domain:a.example)")  # hosts ignore case
    assert fetch(ctx, rules, "a.example/no-scheme")[0] == "allow"
    for other in ("https://b.example/", "https://sub.a.example/", "https://a.example.evil.test/",
                  "https://evil-a.example/"):
        assert fetch(ctx, rules, other) == ("ask", "no matching rule"), other


def test_a_domain_glob_covers_subdomains_only(ctx: ToolContext) -> None:
    rules = policy(["web_fetch(domain:*.python.org)"])
    assert fetch(ctx, rules, "https://docs.python.org/3/")[0] == "allow"
    assert fetch(ctx, rules, "https://python.org/")[0] == "ask"  # the glob needs a subdomain
    assert fetch(ctx, rules, "https://docs.python.org.example/")[0] == "ask"


def test_a_rule_without_the_domain_prefix_covers_nothing(ctx: ToolContext) -> None:
    assert fetch(ctx, policy(["web_fetch(docs.python.org)"]), "https://docs.python.org/")[0] == "ask"


def test_a_star_subject_or_none_covers_every_call_of_that_tool(ctx: ToolContext) -> None:
    for rule in ("web_fetch(*)", "web_fetch()"):
        assert fetch(ctx, policy([rule]), "https://anything.example/") == ("allow", "web_fetch(*)")


def test_asking_suggests_a_rule_for_the_domain_only(ctx: ToolContext) -> None:
    verdict = policy().evaluate(WebFetch(), WebFetchArgs(url="https://docs.python.org/3/"), ctx)
    assert verdict.action == "ask" and verdict.suggested_pattern == "web_fetch(domain:docs.python.org)"


def test_deny_rules_match_by_subject(ctx: ToolContext) -> None:
    rules = policy(deny=["web_fetch(domain:evil.example)"], auto_approve=True)
    action, by = fetch(ctx, rules, "https://evil.example/payload")
    assert action == "deny" and by == "web_fetch(domain:evil.example)"
    assert fetch(ctx, rules, "https://good.example/") == ("allow", "auto-approve")


def test_deny_by_subject_beats_a_broader_allow(ctx: ToolContext) -> None:
    rules = policy(["web_fetch(*)"], ["web_fetch(domain:*.evil.example)"])
    assert fetch(ctx, rules, "https://cdn.evil.example/")[0] == "deny"
    assert fetch(ctx, rules, "https://docs.python.org/")[0] == "allow"


def evaluate(tool: Tool, args: object, ctx: ToolContext, rules: ApprovalPolicy) -> tuple[str, str]:
    verdict = rules.evaluate(tool, args, ctx)
    return verdict.action, verdict.by


def test_a_tool_rule_covers_only_the_tool_it_names(ctx: ToolContext) -> None:
    rules = policy(["run_tests(*)"])
    assert evaluate(RunTests(), RunTestsArgs(), ctx, rules) == ("allow", "run_tests(*)")
    assert evaluate(KillCommand(), JobIdArgs(id="job-1"), ctx, rules) == ("ask", "no matching rule")
    assert fetch(ctx, rules, "https://a.example/")[0] == "ask"


def test_a_deny_rule_for_one_tool_leaves_the_others_alone(ctx: ToolContext) -> None:
    rules = policy(deny=["kill_command(*)"], auto_approve=True)
    assert evaluate(KillCommand(), JobIdArgs(id="job-1"), ctx, rules)[0] == "deny"
    assert evaluate(RunTests(), RunTestsArgs(), ctx, rules) == ("allow", "auto-approve")


def test_a_subject_rule_never_covers_a_tool_without_subjects(ctx: ToolContext) -> None:
    # run_tests has no rule subject: a rule naming one must not quietly allow every call
    assert evaluate(RunTests(), RunTestsArgs(), ctx, policy(["run_tests(domain:a.example)"]))[0] == "ask"
