"""Unbounded growth: `anvil sessions --prune` and the start-up expiry of old sessions' checkpoints."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

from anvil.config import Settings, data_dir
from anvil.core.model.scripted import ScriptedModel
from anvil.core.session.retention import EXPIRY_MARK, expire_checkpoints
from anvil.core.session.store import SessionStore
from anvil.runtime import open_runtime
from tests.conftest import anvil_command

DAY = 86_400


def make_session(data: Path, project: Path, age_days: float, *, checkpoint: bool = True, log: bool = True) -> str:
    """A session last used ``age_days`` ago, with a checkpoint and a command log like a real one leaves."""
    session = SessionStore(data, project).create("m", "v")
    session.append({"t": "event", "event": {"type": "turn_started", "turn": 1, "prompt": f"{age_days} days ago"}})
    session.close()
    when = time.time() - age_days * DAY
    paths = [session.path]
    if checkpoint:
        turn = data / "checkpoints" / session.path.parent.name / session.id / "turn-00001"
        turn.mkdir(parents=True)
        (turn / "index.json").write_text("[]")
        paths += [turn / "index.json", turn, turn.parent]
    if log:
        logs = data / "logs" / session.id
        logs.mkdir(parents=True)
        (logs / "cmd.log").write_text("x" * 1000)
        paths += [logs / "cmd.log", logs]
    for path in paths:
        os.utime(path, (when, when))
    return session.id


def sessions(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(anvil_command("sessions", *args), cwd=project, capture_output=True, text=True, timeout=60)


def test_prune_by_age_with_a_dry_run_first(project: Path) -> None:
    data = data_dir()
    old = make_session(data, project, 40)
    recent = make_session(data, project, 2)
    dry = sessions(project, "--prune", "--older-than", "30", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert old in dry.stdout and recent not in dry.stdout
    assert "Would remove 1 session(s)" in dry.stdout and "nothing was removed" in dry.stdout
    assert (data / "logs" / old).exists()
    done = sessions(project, "--prune", "--older-than", "30")
    assert done.returncode == 0 and "Removed 1 session(s)" in done.stdout
    slug = SessionStore(data, project).dir.name
    assert not (data / "sessions" / slug / f"{old}.jsonl").exists()
    assert not (data / "checkpoints" / slug / old).exists() and not (data / "logs" / old).exists()
    assert (data / "sessions" / slug / f"{recent}.jsonl").exists() and (data / "logs" / recent).exists()
    assert recent in sessions(project).stdout


def test_prune_keeps_the_newest_n_and_other_projects(project: Path, tmp_path: Path) -> None:
    data = data_dir()
    ids = [make_session(data, project, age) for age in (5, 4, 3, 2, 1)]
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = make_session(data, other, 50)
    result = sessions(project, "--prune", "--keep", "2")
    assert result.returncode == 0 and "Removed 3 session(s)" in result.stdout
    listing = sessions(project).stdout
    assert [i for i in ids if i in listing] == ids[3:]
    assert (data / "logs" / elsewhere).exists()  # another project's sessions are not this directory's to prune
    everywhere = sessions(project, "--prune", "--older-than", "30", "--keep", "0", "--all-projects")
    assert elsewhere in everywhere.stdout and not (data / "logs" / elsewhere).exists()


def test_prune_needs_a_rule(project: Path) -> None:
    result = sessions(project, "--prune")
    assert result.returncode == 2 and "--prune needs --older-than DAYS, --keep N, or both" in result.stderr
    assert sessions(project, "--keep", "3").returncode == 2
    assert "Nothing to prune" in sessions(project, "--prune", "--keep", "3").stdout


def test_checkpoints_of_sessions_idle_past_the_retention_go_at_start(project: Path) -> None:
    data = data_dir()
    old = make_session(data, project, 45)
    recent = make_session(data, project, 3)
    slug = SessionStore(data, project).dir.name
    runtime = open_runtime(Settings(model="scripted"), project, model=ScriptedModel([]))
    asyncio.run(runtime.start())
    asyncio.run(runtime.close())
    assert not (data / "checkpoints" / slug / old).exists()
    assert (data / "sessions" / slug / f"{old}.jsonl").exists()  # the conversation stays; only undo data goes
    assert (data / "checkpoints" / slug / recent).exists()
    # Cheap: at most once every few hours, whatever the number of starts.
    older = make_session(data, project, 60)
    assert expire_checkpoints(data, 30) == 0 and (data / "checkpoints" / slug / older).exists()
    assert (data / "checkpoints" / EXPIRY_MARK).exists()
    assert expire_checkpoints(data, 30, force=True) == 1


def test_a_retention_of_zero_keeps_checkpoints_forever(project: Path) -> None:
    data = data_dir()
    old = make_session(data, project, 400)
    runtime = open_runtime(Settings(model="scripted", checkpoint_retention_days=0), project,
                           model=ScriptedModel([]))
    asyncio.run(runtime.start())
    asyncio.run(runtime.close())
    assert (data / "checkpoints" / SessionStore(data, project).dir.name / old).exists()
