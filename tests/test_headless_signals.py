"""`anvil -p` ended by SIGTERM or SIGHUP (`timeout`, a CI runner, a closed terminal): the turn is interrupted, its
result written, the commands it started ended, and the process exits 128 + the signal at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import anvil_command


def _command_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_interrupts_the_turn_writes_its_result_and_ends_its_commands(
        project: Path, isolated_env: Path, tmp_path: Path, signum: int) -> None:
    # The sandbox off, as on a machine without one: nothing but anvil itself can end the command then.
    (isolated_env / "config" / "anvil").mkdir(parents=True, exist_ok=True)
    (isolated_env / "config" / "anvil" / "config.toml").write_text('[sandbox]\nmode = "off"\n')
    pid_file = project / "command.pid"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"text": "A long command.", "tool_calls": [{"name": "run_command", "arguments": {
            "command": f"echo $$ > {pid_file}; exec sleep 300"}}]},
        {"text": "never reached"}]))
    proc = subprocess.Popen(anvil_command("-p", "go", "--model", f"scripted:{script}", "--auto-approve",
                                          "--output-format", "stream-json"),
                            cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        command = int(pid_file.read_text())
        assert _command_alive(command)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in events][-2:] == ["turn_ended", "result"]
    assert events[-1]["stop_reason"] == "interrupted"
    deadline = time.monotonic() + 10
    while _command_alive(command) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _command_alive(command)  # not left running after anvil
    session_file = next((isolated_env / "data" / "anvil" / "sessions").glob("*/*.jsonl"))
    records = [json.loads(line) for line in session_file.read_text().splitlines()]
    assert records[-1]["event"]["type"] == "turn_ended"  # the session records how its turn ended
    assert records[-1]["event"]["reason"] == "interrupted"
