"""The translations between anvil's words and ACP's, one at a time."""

from __future__ import annotations

from pathlib import Path

from acp import embedded_blob_resource, image_block, resource_block, resource_link_block, text_block
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    RequestPermissionResponse,
    SseMcpServer,
)

from anvil.acp.agent import _with_editor_servers
from anvil.acp.permissions import always_rule, approval_decision, approval_options
from anvil.acp.prompt import acp_prompt
from anvil.acp.replay import replay
from anvil.acp.updates import TurnUpdates, diff_contents, fenced, plan_of
from anvil.config import Settings
from anvil.core.events import (
    ApprovalRequested,
    AssistantMessage,
    TextDelta,
    TodoItem,
    ToolCallStarted,
    ToolResultEvent,
)
from anvil.core.mcp.config import McpServerConfig
from anvil.core.subagents.task_tool import SubagentEvent
from anvil.core.tools.files.textdiff import unified_diff

ROOT = Path("/work/project")


def request(**fields: object) -> ApprovalRequested:
    base: dict[str, object] = {"call_id": "c1", "tool": "run_command", "args": {"command": "git push"},
                               "title": "Running `git push`", "command": "git push",
                               "suggested_pattern": "git push *", "rule_files": {"project": "/p/.anvil/x.toml"}}
    return ApprovalRequested(**{**base, **fields})  # type: ignore[arg-type]


def chose(option: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(option_id=option, outcome="selected"))


def test_a_diff_becomes_old_and_new_text_per_hunk() -> None:
    before = "".join(f"line {i}\n" for i in range(1, 30))
    after = before.replace("line 3\n", "line three\n").replace("line 25\n", "")
    contents = diff_contents(unified_diff(before, after, "src/app.py"), ROOT)
    assert [c.path for c in contents] == ["/work/project/src/app.py"] * 2
    assert "line 3\n" in contents[0].old_text and "line three\n" in contents[0].new_text
    assert "line 25\n" in contents[1].old_text and "line 25\n" not in contents[1].new_text
    created = diff_contents(unified_diff("", "hello\n", "new.txt", new_file=True), ROOT)
    assert created[0].old_text is None and created[0].new_text == "hello\n"


def test_the_plan_leaves_out_cancelled_items_and_fences_hold_backticks() -> None:
    plan = plan_of([TodoItem("a", "completed"), TodoItem("b", "cancelled"), TodoItem("c", "pending")])
    assert [(e.content, e.status) for e in plan.entries] == [("a", "completed"), ("c", "pending")]
    assert fenced("x ``` y") == "````\nx ``` y\n````"


def test_always_is_offered_only_where_a_rule_may_be_saved() -> None:
    assert always_rule(request()).pattern == "git push *" and always_rule(request()).scope == "project"
    assert always_rule(request(rule_files={})).scope == "session"
    assert always_rule(request(person_only=True)) is None  # a protected path, a command leaving the sandbox
    assert always_rule(request(suggested_pattern=None)) is None  # a command no safe rule fits
    assert always_rule(request(command=None, suggested_pattern=None, tool="web_fetch")).pattern == "web_fetch"
    kinds = [o.kind for o in approval_options(request(person_only=True), ROOT)]
    assert kinds == ["allow_once", "reject_once"]


def test_answers_become_decisions() -> None:
    event = request()
    assert approval_decision(event, chose("allow-once")).allow is True
    always = approval_decision(event, chose("allow-always"))
    assert (always.allow, always.remember, always.pattern) == (True, "project", "git push *")
    never = approval_decision(event, chose("reject-always"))
    assert (never.allow, never.remember, never.pattern) == (False, "project", "git push *")
    assert approval_decision(event, chose("reject-once")).remember is None
    cancelled = approval_decision(event, RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled")))
    assert cancelled.allow is False and cancelled.by == "interrupt"
    # an "always" the request did not offer is a plain denial, never a saved rule
    assert approval_decision(request(person_only=True), chose("allow-always")).allow is False


def test_prompt_blocks_become_mentions(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    outside = tmp_path.parent / "elsewhere.txt"
    prepared = acp_prompt([
        text_block("see"), resource_link_block("a.py", (tmp_path / "a.py").as_uri() + "#L3:5"),
        resource_link_block("elsewhere", outside.as_uri()), resource_link_block("docs", "https://x.org/doc"),
        image_block("AAAA", "image/png"), resource_block(embedded_blob_resource("file:///b.bin", "AAAA")),
    ], tmp_path)
    assert prepared.typed == f"see @a.py (lines 3-5) `{outside}` [docs](https://x.org/doc) `/b.bin`"
    assert prepared.attached == ("a.py",) and '<file path="a.py">\nx = 1\n</file>' in prepared.text
    assert any("image" in p for p in prepared.problems) and any("binary" in p for p in prepared.problems)


def test_a_streamed_reply_is_not_sent_twice_and_sub_agents_calls_are_their_own() -> None:
    updates = TurnUpdates(ROOT)
    assert len(updates.of(TextDelta("hi"))) == 1 and updates.of(AssistantMessage("hi")) == []
    assert updates.of(AssistantMessage("whole"))[0].content.text == "whole"  # not streamed: sent once here
    inner = ToolCallStarted("c1", "read_file", {"path": "a.py"}, "Reading a.py", kind="read")
    [start] = updates.of(SubagentEvent("explore", "look around", inner, "task-1"))
    assert start.tool_call_id == "task-1/c1" and start.title == "look around: Reading a.py"
    assert updates.call_id("c1") == "task-1/c1"  # its approval refers to the call the client knows
    [done] = updates.of(SubagentEvent("explore", "look around", ToolResultEvent("c1", "read_file", True, "", "x"),
                                      "task-1"))
    assert done.tool_call_id == "task-1/c1" and done.status == "completed"
    [thought] = updates.of(SubagentEvent("explore", "look around", AssistantMessage("found it"), "task-1"))
    assert thought.session_update == "agent_thought_chunk"


def test_replay_shows_what_was_typed_and_each_call() -> None:
    messages = [{"role": "user", "content": "look at @a.py\n\nAttached files:\n<file path=\"a.py\">x</file>"},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": "r1", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
                {"role": "tool", "tool_call_id": "r1", "content": "1\tx"},
                {"role": "assistant", "content": "Done."}]
    updates = replay(messages, lambda name, args: ("Reading a.py", "read"), ROOT)
    kinds = [u.session_update for u in updates]
    assert kinds == ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update",
                     "agent_message_chunk"]
    assert updates[0].content.text == "look at @a.py"
    assert updates[2].title == "Reading a.py" and updates[2].locations[0].path == "/work/project/a.py"
    assert "1\tx" in updates[3].content[0].content.text


def test_the_editors_mcp_servers_join_anvils_own() -> None:
    settings = Settings(mcp_servers={"git": McpServerConfig(command="mine")})
    merged, notices = _with_editor_servers(settings, [
        McpServerStdio(name="fs", command="/bin/fs", args=["--root", "."], env=[EnvVariable(name="A", value="1")]),
        HttpMcpServer(name="web", url="https://x.org/mcp", headers=[HttpHeader(name="Authorization", value="k")],
                      type="http"),
        SseMcpServer(name="old", url="https://x.org/sse", headers=[], type="sse"),
        McpServerStdio(name="git", command="theirs", args=[], env=[]),
    ])
    servers = merged.mcp_servers
    assert servers["git"].command == "mine"  # anvil's own wins
    assert (servers["fs"].command, servers["fs"].args, servers["fs"].env) == ("/bin/fs", ["--root", "."], {"A": "1"})
    assert servers["web"].url == "https://x.org/mcp" and servers["web"].headers == {"Authorization": "k"}
    assert "old" not in servers and len(notices) == 2
