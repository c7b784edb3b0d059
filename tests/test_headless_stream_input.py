"""`anvil -p --input-format stream-json`: another program holds a conversation with anvil, one user message a
line on stdin (Claude Code's shape), one result line per turn."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def user(content: object) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}}) + "\n"


def stream_args(server: ScriptedOpenAIServer, prompt: tuple[str, ...] = ()) -> list[str]:
    return anvil_command("-p", *prompt, "--input-format", "stream-json", "--output-format", "stream-json",
                         "--model", "openai/scripted", "--api-base", server.url)


def test_each_message_is_a_turn_with_its_result(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "Seven, noted."}, {"text": "You said seven."})
    done = subprocess.run(stream_args(server), cwd=project, capture_output=True, text=True, timeout=120,
                          input=user("remember seven") + user([{"type": "text", "text": "what did I say?"}]))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [e for e in events if e["type"] == "result"]
    assert [r["result"] for r in results] == ["Seven, noted.", "You said seven."]
    assert results[0]["session_id"] == results[1]["session_id"] and results[1]["subtype"] == "success"
    assert [e["type"] for e in events].count("session_started") == 1  # one session, two turns
    contents = [m["content"] for m in server.requests[1]["messages"][1:]]
    assert contents == ["remember seven", "Seven, noted.", "what did I say?"]


def test_a_program_waits_for_each_result_before_the_next_message(project: Path,
                                                                  server: ScriptedOpenAIServer) -> None:
    server.add({"text": "first answer"}, {"text": "second answer"})
    proc = subprocess.Popen(stream_args(server), cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    answers = []
    for message in ("one", "two"):
        proc.stdin.write(user(message))
        proc.stdin.flush()
        while (event := json.loads(proc.stdout.readline()))["type"] != "result":
            pass
        answers.append(event["result"])
    _, err = proc.communicate(timeout=60)  # stdin closes: the conversation is over
    assert answers == ["first answer", "second answer"] and proc.returncode == 0, err


def test_lines_that_are_not_user_messages_are_reported(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "still here"})
    lines = ["not json\n", json.dumps({"type": "control_request"}) + "\n", user(""),
             user([{"type": "image", "source": {}}]), user("hello")]
    done = subprocess.run(stream_args(server), cwd=project, capture_output=True, text=True, timeout=120,
                          input="".join(lines))
    events = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert len(errors) == 4 and errors[0].startswith("stdin line 1: not JSON")
    assert "'control_request'" in errors[1] and "empty" in errors[2] and "only text" in errors[3]
    assert all(e["kind"] == "input" for e in events if e["type"] == "error")
    assert [e["result"] for e in events if e["type"] == "result"] == ["still here"]
    assert done.returncode == 1  # the conversation went on, and the caller learns something was wrong
    assert "stdin line 1: not JSON" in done.stderr


def test_stream_input_usage(project: Path, server: ScriptedOpenAIServer) -> None:
    json_out = subprocess.run(anvil_command("-p", "--input-format", "stream-json", "--output-format", "json"),
                              cwd=project, capture_output=True, text=True, timeout=60, input=user("hi"))
    assert json_out.returncode == 2 and "needs --output-format stream-json" in json_out.stderr
    nothing = subprocess.run(stream_args(server), cwd=project, capture_output=True, text=True, timeout=120, input="")
    assert nothing.returncode == 2 and "no user message" in nothing.stderr
    server.add({"text": "from the flag"}, {"text": "from stdin"})
    both = subprocess.run(stream_args(server, ("start here",)), cwd=project, capture_output=True, text=True,
                          timeout=120, input=user("then this"))
    results = [json.loads(line)["result"] for line in both.stdout.splitlines() if '"type": "result"' in line]
    assert results == ["from the flag", "from stdin"], both.stderr
