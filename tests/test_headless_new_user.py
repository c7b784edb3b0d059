"""`anvil -p` and the command line as a new user meets them (issue 17): --help, a positional prompt, the demo
headless, no empty session from a failed start, denied tools and interrupted answers said on stderr, provider
errors as one sentence, unreachable providers retried once, quickly."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from anvil import DEFAULT_MODEL
from anvil.config import Settings
from anvil.core.model.errors import RetryPolicy, classify_error
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.scripted import ScriptedModel
from anvil.headless import run_headless
from anvil.runtime import open_runtime
from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer


def anvil(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(anvil_command(*args), cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def test_help_names_the_default_model_sessions_keys_exit_codes_and_config(project: Path) -> None:
    shown = anvil(project, "--help").stdout
    for expected in (DEFAULT_MODEL, "anvil sessions", "-V, --version", "ANTHROPIC_API_KEY", "ANVIL_API_KEY",
                     "exit codes:", "130 interrupted", "~/.config/anvil/config.toml", ".anvil/config.toml",
                     "PROMPT"):
        assert expected in shown, expected
    assert anvil(project, "-V").stdout.startswith("anvil ")


def test_a_positional_prompt_goes_with_p(project: Path) -> None:
    done = anvil(project, "-p", "--model", "scripted", "What is this project?")
    assert done.returncode == 0, done.stderr
    assert "demo project" in done.stdout
    twice = anvil(project, "-p", "one", "two")
    assert twice.returncode == 2 and "give the prompt once" in twice.stderr


def test_demo_with_p_runs_the_demo_headless_and_leaves_nothing_behind(project: Path, tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = anvil(project, "--demo", "-p", "hi", env={"TMPDIR": str(temp)})
    assert done.returncode == 0, done.stderr
    assert "count_words" in done.stdout  # the demo's fix, explained
    assert list(temp.iterdir()) == []  # the demo's copy (and its sessions) went with it


def test_a_failed_start_leaves_no_empty_session(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"ANTHROPIC_API_KEY", "ANVIL_API_KEY"}}
    failed = subprocess.run(anvil_command("-p", "hi", "--model", DEFAULT_MODEL), cwd=project, capture_output=True,
                            text=True, timeout=120, env=env)
    assert failed.returncode == 1 and "set ANTHROPIC_API_KEY" in failed.stderr
    assert anvil(project, "-p", "hi", "--model", "no-such-model-xyz").returncode == 1
    assert "No sessions yet" in anvil(project, "sessions").stdout


def test_text_mode_says_a_denied_tool_on_stderr(project: Path) -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "run_command", "arguments": {"command": "touch x"}}]},
                           {"text": "I could not run it."}])
    runtime = open_runtime(Settings(model="scripted"), project, model=model, interactive=False)
    out, err = io.StringIO(), io.StringIO()
    assert asyncio.run(run_headless(runtime, "make x", "text", out, err)) == 0
    assert out.getvalue() == "I could not run it.\n"
    assert "anvil: run_command `touch x` was not run: it needs approval, and nobody can answer here; allow it " \
           "with --auto-approve" in err.getvalue()


def test_text_mode_says_an_interrupted_answer_on_stderr(project: Path) -> None:
    with ScriptedOpenAIServer([{"text": "word " * 400}], chunk_delay=0.05) as slow:
        proc = subprocess.Popen(anvil_command("-p", "talk", "--model", "openai/scripted", "--api-base", slow.url),
                                cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not slow.requests and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "anvil: interrupted: the answer below is incomplete" in err and "anvil -c" in err
    assert out.startswith("word word")  # what came before the interrupt is still the answer


@pytest.mark.parametrize(("failure", "words"), [
    (socket.gaierror(-2, "Name or service not known"), "the name does not resolve"),
    (ConnectionRefusedError(111, "Connection refused"), "the connection was refused"),
], ids=["dns", "refused"])
async def test_an_unreachable_provider_is_retried_once_quickly(failure: OSError, words: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[float] = []

    async def refuse(*args: object, **kwargs: object) -> object:
        attempts.append(time.monotonic())
        raise RuntimeError("Connection error.") from failure

    model = LiteLLMModel("openai/x", api_base="http://127.0.0.1:9/v1", retry=RetryPolicy(max_attempts=5))
    litellm = __import__("anvil.core.model.litellm_model", fromlist=["load_litellm"]).load_litellm()
    monkeypatch.setattr(litellm, "acompletion", refuse)
    started = time.monotonic()
    with pytest.raises(Exception) as raised:
        async for _ in model.stream([{"role": "user", "content": "hi"}], []):
            pass
    assert len(attempts) == 2 and time.monotonic() - started < 3  # once more, not 5 times over 15 s
    message = getattr(raised.value, "message", "")
    assert words in message and "gave up after 2 attempts" in message and message.count(". ") == 0


def test_provider_errors_are_one_sentence_in_anvils_words() -> None:
    class InternalServerError(Exception):
        pass

    raw = InternalServerError("litellm.InternalServerError: AnthropicException - Cannot connect to host "
                              "api.anthropic.com:443 ssl:<ssl.SSLContext object at 0x7f99ab> [Name or service not "
                              "known]. Handle with `litellm.InternalServerError`.")
    message = classify_error(raw, DEFAULT_MODEL).message
    assert message == ("Could not reach api.anthropic.com: the name does not resolve; check your network "
                       "connection and the address.")

    class AuthenticationError(Exception):
        pass

    auth = classify_error(AuthenticationError("litellm.AuthenticationError: AnthropicException - invalid x-api-key."),
                          DEFAULT_MODEL).message
    assert auth == ("The provider rejected the API key (anthropic/claude-sonnet-4-5: invalid x-api-key): set "
                    "ANTHROPIC_API_KEY (or ANVIL_API_KEY) to a valid key.")
    for text in (message, auth):
        assert "litellm" not in text and "0x" not in text and ".." not in text and "Exception" not in text


def test_with_no_key_the_call_names_the_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANVIL_API_KEY", raising=False)
    model = LiteLLMModel(DEFAULT_MODEL, retry=RetryPolicy(max_attempts=1))

    async def call() -> None:
        async for _ in model.stream([{"role": "user", "content": "hi"}], []):
            pass

    with pytest.raises(Exception) as raised:
        asyncio.run(call())
    text = str(raised.value)
    assert text.startswith("No API key for anthropic/claude-sonnet-4-5: set ANTHROPIC_API_KEY")
    assert "rejected" not in text and "federation" not in text


def test_out_of_range_config_is_the_one_line_config_error(project: Path, tmp_path: Path) -> None:
    (project / ".anvil").mkdir()
    for value in ("-1", "1.5"):
        (project / ".anvil" / "config.toml").write_text(f"compact_threshold = {value}\n")
        done = anvil(project, "-p", "hi", "--model", "scripted")
        assert done.returncode == 1 and done.stderr.count("\n") == 1
        assert f"'compact_threshold' should be a fraction of the window above 0 and at most 1 (e.g. 0.85), or " \
               f"false, not {value}." in done.stderr
