"""`anvil acp` driven as an editor drives it: a scripted client on the ACP SDK, the agent as a subprocess, the
model behind litellm's real HTTP path (the local scripted server)."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import AgentPlanUpdate, FileEditToolCallContent, ToolCallProgress, ToolCallStart

from tests.support.acp_client import ScriptedClient, acp_agent, prompt, scripted_model, tool_results
from tests.support.openai_server import ScriptedOpenAIServer


def model(server: ScriptedOpenAIServer) -> tuple[str, ...]:
    return ("--model", "openai/scripted", "--api-base", server.url)


def run(command: str, call_id: str) -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": command}}]}


async def test_initialize_and_new_session_say_what_anvil_offers(project: Path, tmp_path: Path) -> None:
    client = ScriptedClient()
    async with acp_agent(client, project, *scripted_model(tmp_path, [])) as conn:
        info = client.initialized
        caps = info.agent_capabilities
        assert caps.load_session is True and caps.prompt_capabilities.embedded_context is True
        assert caps.mcp_capabilities.http is True
        assert info.auth_methods == []  # the scripted model needs no key: nothing to sign in to
        assert info.agent_info.name == "anvil"
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.modes.current_mode_id == "ask"
        assert [m.id for m in session.modes.available_modes] == ["ask", "accept_edits", "auto", "plan"]
        with pytest.raises(RequestError) as raised:
            await conn.new_session(cwd="relative/path", mcp_servers=[])
        assert "not a directory" in str(raised.value.data or raised.value)


async def test_a_missing_key_is_an_auth_method_and_session_new_says_what_to_set(project: Path) -> None:
    client = ScriptedClient()
    async with acp_agent(client, project, "--model", "anthropic/claude-sonnet-4-5") as conn:
        info = client.initialized
        assert len(info.auth_methods) == 1 and "ANTHROPIC_API_KEY" in info.auth_methods[0].description
        with pytest.raises(RequestError) as raised:
            await conn.new_session(cwd=str(project), mcp_servers=[])
        assert "ANTHROPIC_API_KEY" in str(raised.value) and raised.value.code == -32000


async def test_prompt_streams_text_and_an_edit_shows_its_diff(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / "app.py").write_text("def greet():\n    return 'hello'\n")
    server.add({"text": "Reading it first.", "tool_calls": [
                   {"id": "read-1", "name": "read_file", "arguments": {"path": "app.py"}}]},
               {"text": "", "tool_calls": [{"id": "edit-1", "name": "edit_file", "arguments": {
                   "path": "app.py", "old_string": "return 'hello'", "new_string": "return 'hello, world'"}}]},
               {"text": "I changed the greeting to say hello to the world."})
    server.chunk_delay = 0.02  # pieces that arrive apart go on apart (those that queue up are joined)
    client = ScriptedClient()
    async with acp_agent(client, project, *model(server)) as conn:
        assert client.initialized.auth_methods == []  # a local server needs no key
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert await prompt(conn, session.session_id, "make it greet the world") == "end_turn"
    assert len(client.of("agent_message_chunk")) > 3  # streamed in pieces, not sent whole
    assert client.said() == "Reading it first.I changed the greeting to say hello to the world."
    starts = {u.tool_call_id: u for u in client.of("tool_call")}
    assert isinstance(starts["read-1"], ToolCallStart) and starts["read-1"].kind == "read"
    assert starts["read-1"].title == "Reading app.py"
    assert starts["read-1"].locations[0].path == str(project / "app.py")
    assert starts["edit-1"].kind == "edit"
    done = {u.tool_call_id: u for u in client.of("tool_call_update") if u.status in {"completed", "failed"}}
    edit = done["edit-1"]
    assert isinstance(edit, ToolCallProgress) and edit.status == "completed"
    diff = edit.content[0]
    assert isinstance(diff, FileEditToolCallContent) and diff.path == str(project / "app.py")
    assert "return 'hello'" in diff.old_text and "return 'hello, world'" in diff.new_text
    assert edit.locations[0].line == 1
    assert (project / "app.py").read_text() == "def greet():\n    return 'hello, world'\n"


async def test_permission_answered_each_way(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(run("echo once", "c1"), {"text": "ran once"},
               run("echo always", "c2"), {"text": "allowed for good"},
               run("echo always", "c3"), {"text": "no question this time"},
               run("touch nope", "c4"), {"text": "denied"},
               run("touch never", "c5"), {"text": "denied for good"},
               run("touch never", "c6"), {"text": "refused without asking"})
    client = ScriptedClient(["allow-once", "allow-always", "reject-once", "reject-always"])
    async with acp_agent(client, project, *model(server)) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        for text in ("one", "two", "three", "four", "five", "six"):
            assert await prompt(conn, sid, text) == "end_turn"
    assert len(client.requests) == 4  # c3 and c6 were decided by the rules the answers saved
    first = client.requests[0]
    kinds = [o.kind for o in first["options"]]
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    always = next(o for o in first["options"] if o.kind == "allow_always")
    assert "`echo *`" in always.name and ".anvil/permissions.toml" in always.name
    assert first["tool_call"].tool_call_id == "c1" and "echo once" in first["tool_call"].content[0].content.text
    results = {m["tool_call_id"]: m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"}
    assert "once" in results["c1"] and "always" in results["c2"] and "always" in results["c3"]
    assert "denied" in results["c4"] and not (project / "nope").exists()
    assert "deny" in results["c6"].lower() and not (project / "never").exists()
    rules = tomllib.loads((project / ".anvil" / "permissions.toml").read_text())
    assert rules == {"allow": ["echo *"], "deny": ["touch *"]}


async def test_a_client_that_cannot_answer_denies(project: Path, tmp_path: Path, isolated_env: Path) -> None:
    client = ScriptedClient(can_answer=False)
    async with acp_agent(client, project, *scripted_model(tmp_path, [run("touch made", "c1"),
                                                                     {"text": "could not"}])) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        assert await prompt(conn, sid, "make a file") == "end_turn"
    told = tool_results(isolated_env / "data")["c1"]
    assert "could not ask" in told and not (project / "made").exists()
    failed = [u for u in client.of("tool_call_update") if u.tool_call_id == "c1" and u.status == "failed"]
    assert failed


async def test_cancel_mid_turn(project: Path, server: ScriptedOpenAIServer) -> None:
    server.chunk_delay = 0.05
    server.add({"text": "word " * 400, "chunk_chars": 5}, {"text": "after the cancel"})
    client = ScriptedClient()
    async with acp_agent(client, project, *model(server)) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        turn = asyncio.create_task(prompt(conn, sid, "talk a lot"))
        await asyncio.wait_for(client.update_seen.wait(), 30)
        await conn.cancel(session_id=sid)
        assert await asyncio.wait_for(turn, 30) == "cancelled"
        assert len(client.said()) < len("word " * 400)
        server.chunk_delay = 0
        assert await prompt(conn, sid, "go on") == "end_turn"  # the session goes on after a cancel
    assert client.said().endswith("after the cancel")


async def test_cancel_while_a_permission_request_waits(project: Path, tmp_path: Path) -> None:
    asked = asyncio.Event()

    async def hold(tool_call: object) -> str | None:
        asked.set()
        await asyncio.sleep(3600)  # the client never answers: the cancel must end the turn anyway
        return None

    client = ScriptedClient([hold])
    async with acp_agent(client, project, *scripted_model(tmp_path, [run("touch late", "c1"),
                                                                     {"text": "unused"}])) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        turn = asyncio.create_task(prompt(conn, sid, "make a file"))
        await asyncio.wait_for(asked.wait(), 30)
        await conn.cancel(session_id=sid)
        assert await asyncio.wait_for(turn, 30) == "cancelled"
    assert not (project / "late").exists()


async def test_load_replays_the_session(project: Path, server: ScriptedOpenAIServer) -> None:
    (project / "notes.txt").write_text("remember the milk\n")
    server.add({"text": "Looking.", "tool_calls": [{"id": "r1", "name": "read_file",
                                                      "arguments": {"path": "notes.txt"}}]},
               {"text": "It says to remember the milk."}, {"text": "You asked about the notes."})
    first = ScriptedClient()
    async with acp_agent(first, project, *model(server)) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await prompt(conn, sid, "what do my notes say?")
    again = ScriptedClient()
    async with acp_agent(again, project, *model(server)) as conn:
        with pytest.raises(RequestError) as raised:
            await conn.load_session(cwd=str(project), session_id="no-such-session", mcp_servers=[])
        assert "no-such-session" in str(raised.value)
        listed = await conn.list_sessions(cwd=str(project))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "what do my notes say?"
        await conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
        assert again.user_said() == "what do my notes say?"
        assert again.said() == "Looking.It says to remember the milk."
        replayed = {u.tool_call_id: u for u in again.of("tool_call")}
        assert replayed["r1"].title == "Reading notes.txt" and replayed["r1"].kind == "read"
        result = next(u for u in again.of("tool_call_update") if u.tool_call_id == "r1")
        assert "remember the milk" in result.content[0].content.text
        await prompt(conn, sid, "and what did I ask?")
    history = server.requests[-1]["messages"]
    assert history[1]["content"].startswith("what do my notes say?")  # the model has the whole conversation


async def test_modes_and_the_plan(project: Path, tmp_path: Path, isolated_env: Path) -> None:
    todos = [{"content": "Read the code", "status": "completed"}, {"content": "Write the plan", "status":
             "in_progress"}, {"content": "Drop this", "status": "cancelled"}]
    model = scripted_model(tmp_path, [
        {"tool_calls": [{"id": "t1", "name": "todo_write", "arguments": {"todos": todos}}]},
        {"tool_calls": [{"id": "p1", "name": "exit_plan_mode", "arguments": {"plan": "1. Do it"}}]},
        {"text": "Plan approved; carrying on."}])
    client = ScriptedClient(["approve-plan"])
    async with acp_agent(client, project, *model) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        with pytest.raises(RequestError):
            await conn.set_session_mode(session_id=sid, mode_id="yolo")
        assert await prompt(conn, sid, "plan it") == "end_turn"
    plan = client.of("plan")[-1]
    assert isinstance(plan, AgentPlanUpdate)
    assert [(e.content, e.status) for e in plan.entries] == [("Read the code", "completed"),
                                                            ("Write the plan", "in_progress")]
    assert client.requests[0]["tool_call"].content[0].content.text == "1. Do it"
    assert [u.current_mode_id for u in client.of("current_mode_update")] == ["ask"]  # back from plan mode
    told = tool_results(isolated_env / "data")
    assert "The plan was approved" in told["p1"] and "now ask mode" in told["p1"]
