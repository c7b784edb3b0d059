"""`anvil -p` as a person runs it: a subprocess, through litellm, against the local scripted server."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from anvil.config import Settings
from anvil.core.events import HEADLESS_DENIAL
from anvil.core.model.scripted import ScriptedModel
from anvil.headless import run_headless
from anvil.runtime import open_runtime
from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def run_anvil(project: Path, server: ScriptedOpenAIServer | None, *args: str, stdin: str | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = ["--model", "openai/scripted", "--api-base", server.url] if server else []
    return subprocess.run(anvil_command(*args, *base), cwd=project, capture_output=True, text=True,
                          input=stdin, timeout=120, env={**os.environ, **(env or {})})


def test_text_output_is_the_final_answer(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "The answer is 42."})
    result = run_anvil(project, server, "-p", "what is the answer?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The answer is 42.\n"
    assert result.stderr == ""
    # No key configured: a placeholder is sent so local servers just work.
    assert server.headers[0]["authorization"] == "Bearer anvil-no-key"
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "what is the answer?"}


def test_prompt_from_stdin(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "read it"})
    result = run_anvil(project, server, "-p", "-", stdin="summarise\nthis please\n")
    assert result.returncode == 0
    assert server.requests[0]["messages"][-1]["content"] == "summarise\nthis please\n"


def test_json_output(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "Done.", "usage": {"prompt_tokens": 50, "completion_tokens": 5, "cached_tokens": 30,
                                           "reasoning_tokens": 2}})
    result = run_anvil(project, server, "-p", "go", "--output-format", "json")
    data = json.loads(result.stdout)
    assert data["result"] == "Done." and data["stop_reason"] == "done" and data["is_error"] is False
    assert data["turns"] == 1 and data["session_id"]
    # litellm has no price for a local model: the cost is unknown (null), never a made-up 0
    assert data["cost"] is None
    # Claude Code's names for the same things, so tooling written for `claude -p` reads it too
    assert data["type"] == "result" and data["subtype"] == "success" and data["num_turns"] == 1
    assert data["total_cost_usd"] == data["cost"] and isinstance(data["duration_ms"], int)
    assert data["usage"] == {"prompt_tokens": 50, "completion_tokens": 5, "cache_read_tokens": 30,
                             "cache_write_tokens": 0, "reasoning_tokens": 2, "input_tokens": 50, "output_tokens": 5,
                             "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0}
    assert data["permission_denials"] == []


def test_stream_json_writes_one_event_per_line(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "Reading.", "tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
               {"text": "All done here."})
    result = run_anvil(project, server, "-p", "go", "--output-format", "stream-json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[:2] == ["session_started", "turn_started"] and types[-2:] == ["turn_ended", "result"]
    started = events[0]
    assert started["session_id"] == events[1]["session_id"] and started["model"] == "openai/scripted"
    assert started["sandbox"]["mode"] == "auto" and started["sandbox"]["network"] is False
    for expected in ("text_delta", "assistant_message", "usage", "context_usage", "tool_call_started",
                     "tool_result"):
        assert expected in types
    assert events[-2]["reason"] == "done"
    assert events[-1]["subtype"] == "success" and events[-1]["result"] == "All done here."
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert text == "Reading.All done here."


def test_reasoning_streams_as_its_own_event_and_text_mode_leaves_it_out(project: Path,
                                                                        server: ScriptedOpenAIServer) -> None:
    server.add({"reasoning": "Think it through.", "text": "The answer."},
               {"reasoning": "Think it through.", "text": "The answer."})
    streamed = run_anvil(project, server, "-p", "go", "--output-format", "stream-json")
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "reasoning_delta") == "Think it through."
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "The answer."
    assert next(e for e in events if e["type"] == "assistant_message")["reasoning"] == "Think it through."
    usage = next(e for e in events if e["type"] == "usage")
    assert usage["cost"] is None and usage["total_cost"] is None  # one rule: unknown is null, per call and in total
    text = run_anvil(project, server, "-p", "go")
    assert text.returncode == 0 and text.stdout == "The answer.\n" and "Think" not in text.stderr


def test_a_reply_cut_off_and_continued_is_the_whole_answer(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "The first part of an answer cut at 5 tokens"}, {"text": " answer, continued."})
    result = run_anvil(project, server, "-p", "go", env={"ANVIL_MAX_OUTPUT_TOKENS": "5"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The first part of an answer, continued.\n"  # 20 characters, then the rest
    assert "asked the model to continue" in result.stderr


def test_provider_error_is_one_message_and_exit_1(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"status": 401, "error": "Incorrect API key provided"})
    result = run_anvil(project, server, "-p", "hello")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "rejected the API key" in result.stderr
    # The prompt is in the session even though the turn failed: nothing the person wrote is lost.
    listing = subprocess.run(anvil_command("sessions"), cwd=project, capture_output=True, text=True)
    assert "hello" in listing.stdout


def test_unreachable_server(project: Path) -> None:
    result = run_anvil(project, None, "-p", "hi", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1",
                       env={"ANVIL_MAX_RETRIES": "0"})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == ("anvil: Could not connect to http://127.0.0.1:9/v1: the connection was refused; check "
                             "that the server is running and the address is right.\n")


def test_missing_key_is_reported_before_calling(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    result = subprocess.run(anvil_command("-p", "hi", "--model", "anthropic/claude-sonnet-4-5"), cwd=project,
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1
    assert "No API key for anthropic/claude-sonnet-4-5: set ANTHROPIC_API_KEY" in result.stderr


def test_bad_usage_exits_2(project: Path) -> None:
    assert run_anvil(project, None, "--no-such-flag").returncode == 2
    empty = run_anvil(project, None, "-p", "  ")
    assert empty.returncode == 2 and "prompt is empty" in empty.stderr
    assert run_anvil(project, None, "-p", "x", "--max-iterations", "0").returncode == 2


def test_version_and_help(project: Path) -> None:
    from anvil import __version__

    assert run_anvil(project, None, "--version").stdout == f"anvil {__version__}\n"
    assert "--output-format" in run_anvil(project, None, "--help").stdout


def test_continue_resumes_the_conversation(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "First answer."}, {"text": "Second answer."})
    first = run_anvil(project, server, "-p", "remember the number 7", "--output-format", "json")
    session_id = json.loads(first.stdout)["session_id"]
    second = run_anvil(project, server, "-p", "which number?", "--continue", "--output-format", "json")
    assert json.loads(second.stdout)["session_id"] == session_id
    contents = [m.get("content") for m in server.requests[1]["messages"]]
    assert contents[1:] == ["remember the number 7", "First answer.", "which number?"]
    server.add({"text": "Third."})
    third = run_anvil(project, server, "-p", "again", "--resume", session_id)
    assert third.returncode == 0 and len(server.requests[2]["messages"]) == 6
    missing = run_anvil(project, server, "-p", "x", "--resume", "20200101-000000-abcdef")
    assert missing.returncode == 1 and "No session '20200101-000000-abcdef'" in missing.stderr


def test_crash_mid_write_is_recovered(project: Path, server: ScriptedOpenAIServer, isolated_env: Path) -> None:
    server.add({"text": "Before the crash."}, {"text": "After the crash."})
    run_anvil(project, server, "-p", "first prompt")
    session_file = next((isolated_env / "data" / "anvil" / "sessions").rglob("*.jsonl"))
    with session_file.open("a") as f:
        f.write('{"t": "message", "message": {"role": "assistant", "content": "half wri')
    result = run_anvil(project, server, "-p", "second prompt", "--continue")
    assert result.returncode == 0 and result.stdout == "After the crash.\n"
    assert "incomplete last line" in result.stderr
    contents = [m.get("content") for m in server.requests[1]["messages"]]
    assert contents[1:] == ["first prompt", "Before the crash.", "second prompt"]


def test_sigint_interrupts_with_exit_130(project: Path) -> None:
    with ScriptedOpenAIServer([{"text": "word " * 400}], chunk_delay=0.05) as slow:
        proc = subprocess.Popen(anvil_command("-p", "talk", "--model", "openai/scripted", "--api-base", slow.url,
                                              "--output-format", "stream-json"),
                                cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        deadline = time.time() + 60
        while time.time() < deadline:  # wait until text is streaming
            line = proc.stdout.readline()
            if '"text_delta"' in line:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        ended, result = (json.loads(line) for line in out.splitlines()[-2:])
        assert ended["type"] == "turn_ended" and ended["reason"] == "interrupted"
        assert result["type"] == "result" and result["stop_reason"] == "interrupted" and result["is_error"] is True
        assert result["subtype"] == "error_during_execution"
        assert "Traceback" not in err


def test_scripted_demo_model_runs_without_key(project: Path) -> None:
    result = subprocess.run(anvil_command("-p", "what is this?", "--model", "scripted"), cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "demo project" in result.stdout


def test_sessions_listing(project: Path, server: ScriptedOpenAIServer) -> None:
    assert "No sessions yet" in subprocess.run(anvil_command("sessions"), cwd=project, capture_output=True,
                                               text=True).stdout
    server.add({"text": "ok"})
    run_anvil(project, server, "-p", "list me please")
    out = subprocess.run(anvil_command("sessions"), cwd=project, capture_output=True, text=True).stdout
    header, row = out.splitlines()
    assert header.split()[:3] == ["ID", "STARTED", "TURNS"]
    assert row.split()[3] == "1" and row.endswith("list me please")
    assert sys.executable  # the CLI ran under this interpreter


def test_a_listing_piped_into_head_ends_quietly(project: Path, isolated_env: Path) -> None:
    """`anvil sessions | head`: the reader leaves after a line; no BrokenPipeError traceback, for any listing."""
    assert run_anvil(project, None, "-p", "hi", "--model", "scripted").returncode == 0
    first = next((isolated_env / "data" / "anvil" / "sessions").rglob("*.jsonl"))
    for i in range(1500):  # over 64 KiB of listing: more than a pipe holds, so the writer meets the closed end
        (first.parent / f"{first.stem}-{i:04d}.jsonl").write_bytes(first.read_bytes())
    for args in (("sessions",), ("sessions", "--prune", "--keep", "0", "--dry-run")):
        listing = subprocess.Popen(anvil_command(*args), cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        assert listing.stdout is not None and listing.stderr is not None
        assert listing.stdout.readline().strip()  # what `head -1` reads, and then it goes
        listing.stdout.close()
        err = listing.stderr.read()
        assert listing.wait(timeout=60) == 1
        assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_unknown_model_is_one_clear_message(project: Path) -> None:
    result = run_anvil(project, None, "-p", "hi", "--model", "no-such-model-xyz")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "doesn't know which provider serves 'no-such-model-xyz'" in result.stderr


def test_a_call_that_needs_approval_is_denied_with_the_one_headless_text(project: Path) -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "run_command", "arguments": {"command": "touch x"}}]},
                           {"text": "I could not run it."}])
    runtime = open_runtime(Settings(model="scripted"), project, model=model, interactive=False)
    out, err = io.StringIO(), io.StringIO()
    code = asyncio.run(run_headless(runtime, "make x", "stream-json", out, err))
    assert code == 0 and not (project / "x").exists()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    answered = next(e for e in events if e["type"] == "approval_answered")
    assert answered["by"] == "headless" and answered["message"].startswith(HEADLESS_DENIAL.message)
    assert "Why it needs approval: no rule allows: touch x." in answered["message"]
    requested = next(e for e in events if e["type"] == "approval_requested")
    assert requested["cwd"] == str(project.resolve()) and requested["rule_files"]["project"].endswith(
        ".anvil/permissions.toml")
    tool_result = next(m for m in model.calls[1] if m["role"] == "tool")["content"]
    assert HEADLESS_DENIAL.message in tool_result
    [denial] = events[-1]["permission_denials"]  # the result lists it, in Claude Code's words
    assert denial == {"tool_name": "run_command", "tool_use_id": answered["call_id"],
                      "tool_input": {"command": "touch x"}, "by": "headless"}


def test_a_connection_dropped_mid_reply_keeps_the_text_and_anvil_c_goes_on(project: Path,
                                                                            server: ScriptedOpenAIServer) -> None:
    server.add({"text": "The first half of the answer, and then the second half.", "drop_after": 4,
                "chunk_chars": 10})
    cut = run_anvil(project, server, "-p", "explain")
    assert cut.returncode == 75, cut.stderr  # EX_TEMPFAIL: a passing failure; it was exit 1, "overloaded"
    assert cut.stdout == "The first half of the answer, \n"  # what was shown (3 chunks) is the answer so far
    lines = cut.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cut.stderr
    assert "dropped in the middle of its reply; the text so far is kept. Go on with: anvil -c -p continue" in lines[0]
    server.add({"text": " and the second half."})
    resumed = run_anvil(project, server, "-c", "-p", "continue", "--output-format", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == " and the second half."
    sent = server.requests[-1]["messages"]
    assert sent[-2] == {"role": "assistant",
                        "content": "The first half of the answer, \n\n[the connection to the provider dropped here]"}
    assert sent[-1] == {"role": "user", "content": "continue"}
