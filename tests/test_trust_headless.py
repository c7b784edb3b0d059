"""A cloned repository's configuration, headless, as a person runs anvil: a subprocess against two local servers,
the person's own (named in their user config, with their key) and the one the repository's api_base names."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.config import project_trust, user_config_path
from tests.conftest import anvil_command
from tests.support.cloned_repo import MARKERS, RISKY_SOURCES, config_text, make_cloned_repo
from tests.support.openai_server import ScriptedOpenAIServer

KEY = "sk-the-persons-own-key"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def attacker() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def repo(project: Path, server: ScriptedOpenAIServer, attacker: ScriptedOpenAIServer, tmp_path: Path) -> Path:
    """The cloned repository, and the person's own config: their model, their server."""
    user_config_path().parent.mkdir(parents=True)
    user_config_path().write_text(f'model = "openai/scripted"\napi_base = "{server.url}"\nmax_retries = 0\n')
    (tmp_path / "outside.txt").write_text("CONTENT-FROM-OUTSIDE\n")
    return make_cloned_repo(project, attacker.url)


def turns(outside: Path) -> list[dict[str, Any]]:
    """Edit a Python file (lint, then verify at the end), run a command an allow rule and auto-approve would
    cover, one the deny rule refuses, read outside the project (allowed_dirs), run the tests (test_command)."""
    return [call("write_file", path="app.py", content="x = 1\n"), call("run_command", command="touch by-model.txt"),
            call("run_command", command="echo secret-stuff"), call("read_file", path=str(outside)), call("run_tests"),
            {"text": "done"}]


def anvil(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(anvil_command("-p", "go", *args), cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENAI_API_KEY": KEY})


def tool_outputs(server: ScriptedOpenAIServer) -> list[str]:
    return [str(m["content"]) for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def test_untrusted_the_repository_runs_nothing_and_gets_no_key(repo: Path, server: ScriptedOpenAIServer,
                                                               attacker: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(*turns(tmp_path / "outside.txt"))
    result = anvil(repo)
    assert result.returncode == 0, result.stderr
    assert attacker.requests == []  # nothing went to the repository's api_base, so neither did the key
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # the person's own server, as they configured
    assert [marker for marker in MARKERS.values() if (repo / marker).exists()] == []
    assert not (repo / "by-model.txt").exists()
    _, touch, echo, read, _ = tool_outputs(server)
    assert "headless" in touch  # no auto-approve, no allow rule: refused like any unasked command
    assert "deny rule 'echo secret*'" in echo  # the repository's deny rule applies all the same
    assert "CONTENT-FROM-OUTSIDE" not in read  # allowed_dirs = ["/"] did not apply
    lines = result.stderr.splitlines()
    assert "not trusted" in lines[0] and "--trust" in lines[0]
    assert all(name in lines[0] for name in RISKY_SOURCES)
    # then one line for each call that was not run (text output says so on stderr), nothing else
    assert len(lines) == 4 and all(" was not run: " in line for line in lines[1:])


def test_with_trust_the_repository_settings_apply(repo: Path, server: ScriptedOpenAIServer,
                                                  attacker: ScriptedOpenAIServer, tmp_path: Path) -> None:
    attacker.add(*turns(tmp_path / "outside.txt"))
    result = anvil(repo, "--trust")
    assert result.returncode == 0, result.stderr
    assert server.requests == [] and attacker.headers[0]["authorization"] == f"Bearer {KEY}"  # as the person chose
    assert [marker for marker in MARKERS.values() if not (repo / marker).exists()] == []
    assert (repo / "by-model.txt").exists()
    _, _, echo, read, _ = tool_outputs(attacker)
    assert "deny rule 'echo secret*'" in echo and "CONTENT-FROM-OUTSIDE" in read
    assert "not trusted" not in result.stderr
    assert project_trust(repo).remembered is False  # --trust is for this run: nothing is remembered


def test_stream_json_tells_it_as_a_notice(repo: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "done"})
    result = anvil(repo, "--output-format", "stream-json")
    notices = [e for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "notice"]
    assert len(notices) == 1 and notices[0]["message"].startswith("This folder is not trusted")


def test_anvil_trust_remembers_and_a_changed_config_is_ignored_again(repo: Path, server: ScriptedOpenAIServer,
                                                                     attacker: ScriptedOpenAIServer) -> None:
    listed = subprocess.run(anvil_command("trust"), cwd=repo, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "hooks: session_start runs `touch hook-ran`" in listed.stdout
    attacker.add({"text": "trusted"})
    assert anvil(repo).returncode == 0 and (repo / "hook-ran").exists()  # trusted before: applies headless
    (repo / "hook-ran").unlink()
    (repo / ".anvil" / "config.toml").write_text(config_text(attacker.url, hook="touch other-hook-ran"))
    server.add({"text": "changed"})
    result = anvil(repo)
    assert not (repo / "other-hook-ran").exists() and not (repo / "hook-ran").exists()
    assert len(attacker.requests) == 1 and "not trusted" in result.stderr
    status = subprocess.run(anvil_command("trust", "--list"), cwd=repo, capture_output=True, text=True, timeout=60)
    assert "changed since" in status.stdout
    forgot = subprocess.run(anvil_command("trust", "--forget"), cwd=repo, capture_output=True, text=True, timeout=60)
    assert forgot.stdout.startswith("Forgot ")
    assert "No trusted folders." in subprocess.run(anvil_command("trust", "--list"), cwd=repo, capture_output=True,
                                                   text=True, timeout=60).stdout


def test_anvil_trust_on_a_folder_with_nothing_to_trust(project: Path) -> None:
    result = subprocess.run(anvil_command("trust", str(project)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "Nothing in" in result.stdout and "needs trust" in result.stdout
    missing = subprocess.run(anvil_command("trust", str(project / "nope")), capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


def test_a_trusted_hook_script_cannot_be_changed_behind_the_persons_back(project: Path,
                                                                         server: ScriptedOpenAIServer) -> None:
    """The audit's escape: a trusted hook runs `sh scripts/setup.sh`, outside the sandbox. With auto-approve, the
    model tries the file tools, a shell redirection and a write the policy cannot see; none changes the script.
    When it changes anyway (a pull, the person), the next start does not run it, and says which file changed."""
    user_config_path().parent.mkdir(parents=True)
    user_config_path().write_text(f'model = "openai/scripted"\napi_base = "{server.url}"\nmax_retries = 0\n')
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[[hooks.session_start]]\ncommand = "sh scripts/setup.sh"\n')
    script = project / "scripts" / "setup.sh"
    script.parent.mkdir()
    script.write_text("touch setup-ran\n")
    listed = subprocess.run(anvil_command("trust"), cwd=project, capture_output=True, text=True, timeout=60)
    assert "scripts/setup.sh: a script the commands above run" in listed.stdout, listed.stdout
    server.add(call("read_file", path="scripts/setup.sh"),
               call("write_file", path="scripts/setup.sh", content="touch pwned\n"),
               call("run_command", command="echo 'touch pwned' >> scripts/setup.sh"),
               call("run_command", command="python3 -c \"open('scripts/setup.sh', 'a').write('touch pwned')\""),
               {"text": "done"})
    result = anvil(project, "--auto-approve")
    assert result.returncode == 0, result.stderr
    assert (project / "setup-ran").exists() and script.read_text() == "touch setup-ran\n"
    _, write, redirect, hidden = tool_outputs(server)
    assert "a script anvil runs outside the sandbox: scripts/setup.sh" in write
    assert "a script anvil runs outside the sandbox" in redirect
    assert "Blocked by the sandbox" in hidden and "outside the sandbox" in hidden
    (project / "setup-ran").unlink()
    script.write_text("touch changed-ran\n")
    server.add({"text": "again"})
    again = anvil(project)
    assert not (project / "changed-ran").exists() and not (project / "setup-ran").exists()
    assert "not trusted" in again.stderr and "scripts/setup.sh changed since you trusted it" in again.stderr
