"""What the editor brings: its unsaved buffers, its terminal, its MCP servers, files mentioned in the prompt, and
a person who answers the model's questions.

These are about the editor's side, not the model's path: the agent replays a script (no litellm, so it starts
in a third of the time), and what the model was sent and read is read back from the session file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from acp import embedded_text_resource, resource_block, resource_link_block, text_block
from acp.schema import McpServerStdio, TerminalToolCallContent

from tests.support.acp_client import ScriptedClient, acp_agent, prompt, recorded_messages, scripted_model, tool_results


def run(command: str, call_id: str) -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": command}}]}


async def test_read_file_sees_the_editors_unsaved_text(project: Path, tmp_path: Path, isolated_env: Path) -> None:
    (project / "app.py").write_text("limit = 1\n")
    model = scripted_model(tmp_path, [
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "app.py"}}]},
        {"tool_calls": [{"id": "r2", "name": "read_file", "arguments": {"path": "README.md"}}]},
        {"text": "seen"}])
    client = ScriptedClient(buffers={str(project / "app.py"): "limit = 2  # not saved yet\n"})
    async with acp_agent(client, project, *model) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await prompt(conn, sid, "what is the limit?")
    results = tool_results(isolated_env / "data")
    assert "limit = 2  # not saved yet" in results["r1"] and "unsaved changes" in results["r1"]
    assert "limit = 1" not in results["r1"]
    assert "A tiny project." in results["r2"] and "unsaved" not in results["r2"]  # same as on disk: no note
    assert client.reads == [str(project / "app.py"), str(project / "README.md")]


async def test_files_mentioned_in_the_prompt_are_attached(project: Path, tmp_path: Path, isolated_env: Path) -> None:
    (project / "app.py").write_text("print('on disk')\n")
    (project / "lib.py").write_text("old = True\n")
    client = ScriptedClient()
    blocks = [text_block("compare"), resource_link_block("app.py", (project / "app.py").as_uri()),
              text_block("with"), resource_block(embedded_text_resource((project / "lib.py").as_uri(),
                                                                        "new = True  # unsaved\n"))]
    async with acp_agent(client, project, *scripted_model(tmp_path, [{"text": "got them"}])) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        response = await conn.prompt(session_id=sid, prompt=blocks)
        assert response.stop_reason == "end_turn"
    sent = next(m["content"] for m in recorded_messages(isolated_env / "data") if m["role"] == "user")
    assert sent.startswith("compare @app.py with `@lib.py`")
    assert '<file path="app.py">\nprint(\'on disk\')\n</file>' in sent
    assert '<file path="lib.py">\nnew = True  # unsaved\n</file>' in sent and "old = True" not in sent


async def test_commands_run_in_the_editors_terminal_when_chosen(project: Path, tmp_path: Path,
                                                                isolated_env: Path) -> None:
    config = isolated_env / "config" / "anvil"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("[acp]\nterminal = true\n")
    client = ScriptedClient(["allow-once"], terminal=True)
    model = scripted_model(tmp_path, [run("echo in-the-editor", "c1"), {"text": "done"}])
    async with acp_agent(client, project, *model) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await prompt(conn, sid, "say something")
    [terminal] = client.terminals.values()
    assert terminal.argv[-1] == "echo in-the-editor" and terminal.cwd == str(project)
    if shutil.which("bwrap"):  # the editor runs the sandbox's command line: the sandbox holds there too
        # (behind the one-line launcher that puts the command under the sandbox's process cap)
        assert "bwrap" in [Path(word).name for word in terminal.argv[:8]]
    assert "in-the-editor" in tool_results(isolated_env / "data")["c1"]
    shown = [c for u in client.of("tool_call_update") if u.tool_call_id == "c1" for c in u.content or []]
    assert any(isinstance(c, TerminalToolCallContent) and c.terminal_id == "term-0" for c in shown)


async def test_without_the_choice_anvil_runs_commands_itself(project: Path, tmp_path: Path,
                                                             isolated_env: Path) -> None:
    client = ScriptedClient(["allow-once"], terminal=True)
    async with acp_agent(client, project, *scripted_model(tmp_path, [run("echo by-anvil", "c1"),
                                                                     {"text": "done"}])) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await prompt(conn, sid, "say something")
    assert client.terminals == {} and "by-anvil" in tool_results(isolated_env / "data")["c1"]


MCP_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("editor")

@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

server.run()
'''


async def test_the_editors_mcp_servers_join_anvils(project: Path, tmp_path: Path, isolated_env: Path) -> None:
    script = tmp_path / "editor_mcp.py"
    script.write_text(MCP_SERVER)
    model = scripted_model(tmp_path, [
        {"tool_calls": [{"id": "m1", "name": "mcp__editor__add", "arguments": {"a": 2, "b": 3}}]}, {"text": "five"}])
    client = ScriptedClient(["allow-once"])
    editor_server = McpServerStdio(name="editor", command=sys.executable, args=[str(script)], env=[])
    async with acp_agent(client, project, *model) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[editor_server])).session_id
        await prompt(conn, sid, "add them")
    assert client.requests[0]["tool_call"].tool_call_id == "m1"  # asked, as anvil asks for any MCP tool
    assert tool_results(isolated_env / "data")["m1"].strip() == "5"


async def test_questions_are_answered_by_the_person(project: Path, tmp_path: Path, isolated_env: Path) -> None:
    ask = {"id": "q1", "name": "ask_user", "arguments": {"question": "Which database?",
                                                          "options": ["sqlite", "postgres"]}}
    model = scripted_model(tmp_path, [{"tool_calls": [ask]}, {"text": "postgres it is"},
                                      {"tool_calls": [{**ask, "id": "q2"}]}, {"text": "the next turn's answer"}])
    client = ScriptedClient(["option-1", "answer-in-chat"])
    async with acp_agent(client, project, *model) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        assert await prompt(conn, sid, "set up storage") == "end_turn"
        assert await prompt(conn, sid, "again") == "end_turn"  # answered in the chat: the turn ends for it
        assert "the next turn's answer" not in client.said()  # no model call after that choice
    options = [o.name for o in client.requests[0]["options"]]
    assert options == ["sqlite", "postgres", "I'll answer in the chat"]
    assert "The person answered: postgres" in tool_results(isolated_env / "data")["q1"]
    assert "> Which database?" in client.said()
