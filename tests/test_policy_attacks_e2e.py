"""The issue's attack strings through the real agent loop: ``anvil -p`` against the scripted server, no rules.

Each payload only creates a marker file inside the project, so a failure shows as a file that should not exist
and never harms the machine. In ask mode (headless: nobody to ask) and plan mode every one is refused before it
runs, and the model reads why; under auto-approve a destructive command whose target is only known at run time
is refused too, while the directory it named survives.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer

# (command, marker it would create if it ran, words of the reason the model must read)
ATTACKS = [
    ("x='a[$(touch pwned-arith)]'; (( x ))", "pwned-arith", "as arithmetic"),
    ("x='a[$(touch pwned-dollar)]'; echo $((x))", "pwned-dollar", "as arithmetic"),
    ("y=abc; x='a[$(touch pwned-offset)]'; echo ${y:x}", "pwned-offset", "as arithmetic"),
    ("x='$(touch pwned-prompt)'; echo ${x@P}", "pwned-prompt", "prompt string"),
    ("x='a[$(touch pwned-indirect)]'; echo ${!x}", "pwned-indirect", "${!...}"),
    ("case a in b|$(touch pwned-case)) ;; esac", "pwned-case", "no rule allows: touch pwned-case"),
    ("cat <<EOF\\\nEOF\n$(touch pwned-heredoc)\nEOF", "pwned-heredoc", "could not be checked"),
    ("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch pwned-git' git status",
     "pwned-git", "sets GIT_CONFIG_COUNT"),
    ("PROMPT_COMMAND='touch pwned-prompt-command'; bash -ic true", "pwned-prompt-command", "PROMPT_COMMAND"),
]


def call(command: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


def run_attacks(project: Path, server: ScriptedOpenAIServer, commands: list[str], *flags: str,
                env: dict[str, str] | None = None) -> list[dict[str, object]]:
    server.add(*(call(c) for c in commands), {"text": "done"})
    result = subprocess.run(anvil_command("-p", "tidy up", "--output-format", "stream-json", *flags, "--model",
                                          "openai/scripted", "--api-base", server.url),
                            cwd=project, capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return [e for e in events if e["type"] == "tool_result" and e["name"] == "run_command"]


def model_read(server: ScriptedOpenAIServer) -> list[str]:
    """What the model read back for each of its calls, in order."""
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def repo(project: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


@pytest.mark.parametrize("mode", ["ask", "plan"])
def test_the_attacks_are_refused_before_they_run(repo: Path, server: ScriptedOpenAIServer, mode: str) -> None:
    results = run_attacks(repo, server, [c for c, _, _ in ATTACKS], "--mode", mode)
    assert len(results) == len(ATTACKS)
    assert not any(r["ok"] for r in results), [r["output"] for r in results if r["ok"]]
    for (command, marker, why), said in zip(ATTACKS, model_read(server), strict=True):
        assert not (repo / marker).exists(), f"{command!r} ran"
        assert why in said, (command, said)
        assert ("plan mode" in said) if mode == "plan" else ("nobody can answer here" in said), said


def test_auto_approve_refuses_a_blind_delete_and_says_what_to_do(project: Path, server: ScriptedOpenAIServer) -> None:
    victim = project / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("still here\n")
    env = {**__import__("os").environ, "VICTIM": str(victim)}
    results = run_attacks(project, server, ['rm -rf "$VICTIM"', "find $VICTIM -delete", "echo ok"],
                          "--auto-approve", env=env)
    assert [r["ok"] for r in results] == [False, False, True]
    assert (victim / "keep.txt").read_text() == "still here\n"
    said = model_read(server)
    assert "deletes recursively a path only known at run time: $VICTIM" in said[0]
    assert "write it out literally" in said[0] and "ask the user" in said[0]
    assert "only known at run time: $VICTIM" in said[1]
