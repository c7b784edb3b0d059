"""The warm engine as a person meets it: `anvil` runs hand their work to it, and without it everything still runs.

One engine is started for the module (its warm-up imports litellm: seconds), in its own data directory. Every
run is a real `anvil` process (anvil.engine.client) with its own environment and working directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anvil.engine import paths, wire
from anvil.engine.reach import PROTOCOL

SYSTEM_PYTHON = "/usr/bin/python3"
WARM_UP = 180.0  # seconds an engine may take to get warm on a loaded 2-core machine


def client(*args: str) -> list[str]:
    return [sys.executable, "-m", "anvil.engine.client", *args]


def engine_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a person who turned the engine on (it is off by default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_") and k != "CI"}
    env.update({"XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"), "ANVIL_ENGINE": "on",
                **extra})
    return env


def run(args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(client(*args), cwd=cwd, env=env, capture_output=True, text=True, input=stdin,
                          timeout=120)


def status(env: dict[str, str], cwd: Path) -> dict[str, object] | None:
    """The engine's own status reply (pid, runs served), or None when none answers."""
    path = paths.socket_path(env)
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX) as conn:
        try:
            conn.connect(str(path))
            wire.send(conn, {"protocol": PROTOCOL, "kind": "status"})
            return wire.receive(conn)[0]
        except (OSError, wire.WireError):
            return None


def wait_for(condition, what: str, timeout: float = WARM_UP) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@contextlib.contextmanager
def short_home() -> Iterator[Path]:
    """A home directory short enough that the engine's socket address fits under its data directory."""
    home = Path(tempfile.mkdtemp(prefix="anvil-e-", dir="/tmp"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as path:
        yield path


@pytest.fixture(scope="module")
def engine() -> Iterator[tuple[dict[str, str], Path]]:
    """A running engine (started the way a person's first run starts it) and the environment that reaches it."""
    with short_home() as home:
        yield from _started_engine(home)


def _started_engine(home: Path) -> Iterator[tuple[dict[str, str], Path]]:
    env = engine_env(home)
    project = home / "project"
    project.mkdir()
    first = run(["-p", "hi", "--model", "scripted"], env, project)  # no engine yet: runs here, starts one
    assert first.returncode == 0, first.stderr
    assert "scripted model" in first.stdout
    wait_for(lambda: status(env, project) is not None, "the engine to be warm")
    yield env, project
    reply = status(env, project)
    subprocess.run(client("engine", "stop"), env=env, capture_output=True, timeout=60)
    if reply is not None and alive(int(reply["pid"])):  # type: ignore[call-overload]
        os.kill(int(reply["pid"]), signal.SIGKILL)  # type: ignore[call-overload]


def test_a_second_run_is_served_by_the_engine(engine: tuple[dict[str, str], Path]) -> None:
    env, project = engine
    before = status(env, project)
    assert before is not None
    result = run(["-p", "hi", "--model", "scripted"], env, project)
    assert result.returncode == 0, result.stderr
    assert "scripted model" in result.stdout
    after = status(env, project)
    assert after is not None and after["pid"] == before["pid"]
    assert after["served"] == before["served"] + 1  # type: ignore[operator]


def test_each_run_gets_its_own_directory_and_environment(engine: tuple[dict[str, str], Path],
                                                         tmp_path: Path) -> None:
    env, _ = engine
    seen = []
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the second script"}]))
    for name, model in (("one", "scripted"), ("two", f"scripted:{script}")):
        project = tmp_path / name
        project.mkdir()
        result = run(["-p", "hi", "--output-format", "stream-json"], {**env, "ANVIL_MODEL": model}, project)
        started = json.loads(result.stdout.splitlines()[0]) if result.stdout else {}
        seen.append((started.get("cwd"), started.get("model"), result.returncode))
    assert seen[0] == (str(tmp_path / "one"), "scripted", 0)
    assert seen[1] == (str(tmp_path / "two"), f"scripted:{script}", 0)


def test_exit_codes_stderr_and_stdin_pass_through(engine: tuple[dict[str, str], Path]) -> None:
    env, project = engine
    served = status(env, project)["served"]  # type: ignore[index]
    empty = run(["-p", ""], env, project)
    assert empty.returncode == 2
    assert "the prompt is empty" in empty.stderr
    piped = run(["-p", "-", "--model", "scripted", "--output-format", "json"], env, project, stdin="hello")
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["type"] == "result"
    assert status(env, project)["served"] == served + 2  # type: ignore[index, operator]


def _conversation(env: dict[str, str], project: Path) -> tuple[subprocess.Popen[str], int]:
    """A run that waits on stdin for messages (stream-json), and the pid of the engine's child running it."""
    engine_pid = int(status(env, project)["pid"])  # type: ignore[index, call-overload]
    before = set(_children(engine_pid))
    proc = subprocess.Popen(client("-p", "--model", "scripted", "--input-format", "stream-json", "--output-format",
                                   "stream-json"), cwd=project, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: set(_children(engine_pid)) - before, "the engine's child for the run", 60)
    children = set(_children(engine_pid)) - before
    assert len(children) == 1
    return proc, children.pop()


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as file:
        return [int(p) for p in file.read().split()]


def test_a_signal_reaches_the_run_and_its_code_comes_back(engine: tuple[dict[str, str], Path]) -> None:
    env, project = engine
    proc, child = _conversation(env, project)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    wait_for(lambda: not alive(child), "the run's process to end", 30)


def test_the_run_ends_when_its_client_is_killed(engine: tuple[dict[str, str], Path]) -> None:
    env, project = engine
    proc, child = _conversation(env, project)
    assert alive(child)
    proc.kill()
    proc.wait(timeout=30)
    wait_for(lambda: not alive(child), "the run's process to end with its client", 30)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap to make a sandbox")
def test_a_client_in_a_sandbox_is_refused_and_runs_in_its_sandbox(engine: tuple[dict[str, str], Path]) -> None:
    env, project = engine
    served = status(env, project)["served"]  # type: ignore[index]
    # The whole file system as it is, the socket reachable, but another mount namespace and no_new_privs: a
    # run forked by the engine would be outside both.
    probe = ["bwrap", "--dev-bind", "/", "/", "--", *client("-p", "hi", "--model", "scripted", "--output-format",
                                                             "stream-json")]
    result = subprocess.run(probe, cwd=project, env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 and "bwrap:" in result.stderr:
        pytest.skip(f"bubblewrap cannot make a sandbox here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["type"] == "result"
    assert status(env, project)["served"] == served  # refused: it ran in its own process, in its sandbox
    log = (paths.engine_dir(env) / "engine.log").read_text()
    assert "refused a run" in log and "ns/mnt" in log and "NoNewPrivs" in log


def test_a_run_gets_its_clients_resource_limits(engine: tuple[dict[str, str], Path]) -> None:
    import resource

    env, project = engine

    def lowered() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, 300))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    engine_pid = int(status(env, project)["pid"])  # type: ignore[index, call-overload]

    def row_engine(name: str) -> list[str]:
        lines = Path(f"/proc/{engine_pid}/limits").read_text().splitlines()
        return next(line[len(name):].split()[:2] for line in lines if line.startswith(name))

    assert row_engine("Max open files") != ["200", "300"]
    before = set(_children(engine_pid))
    proc = subprocess.Popen(client("-p", "--model", "scripted", "--input-format", "stream-json", "--output-format",
                                   "stream-json"), cwd=project, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lowered)
    try:
        wait_for(lambda: set(_children(engine_pid)) - before, "the engine's child for the run", 60)
        child = (set(_children(engine_pid)) - before).pop()

        def row(name: str) -> list[str]:  # soft and hard, once the child has become the run (a moment after its fork)
            lines = Path(f"/proc/{child}/limits").read_text().splitlines()
            return next(line[len(name):].split()[:2] for line in lines if line.startswith(name))

        wait_for(lambda: row("Max open files") != row_engine("Max open files"), "the run to take its limits", 30)
        assert row("Max open files") == ["200", "300"]
        assert row("Max core file size") == ["0", "0"]
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(SYSTEM_PYTHON), reason="needs root to act as another "
                    "user, and a Python that user can run")
def test_the_engine_serves_no_other_user(engine: tuple[dict[str, str], Path]) -> None:
    env, project = engine
    path = paths.socket_path(env)
    served = status(env, project)["served"]  # type: ignore[index]
    # The system's Python: the test's own interpreter may sit where the other user cannot read.
    probe = ("import array, json, socket, struct, sys\n"
             "conn = socket.socket(socket.AF_UNIX)\n"
             "conn.connect(sys.argv[1])\n"
             "body = json.dumps({'protocol': 1, 'kind': 'run', 'argv': ['-p', 'hi'], 'cwd': '/', 'env': {},"
             " 'umask': 18}).encode()\n"
             "try:\n"
             "    conn.sendmsg([struct.pack('!I', len(body)) + body],"
             " [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0, 1, 2]))])\n"
             "    print('answered' if conn.recv(100) else 'closed')\n"
             "except ConnectionError:\n"
             "    print('closed')\n")
    # Only so that the other user reaches the socket at all: every directory on the way opened for passing through.
    chain = [path, *[p for p in path.parents if str(p).startswith(str(project.parent))]]
    modes = {p: os.stat(p).st_mode for p in chain}
    for target in chain:
        os.chmod(target, 0o666 if target == path else 0o711)
    try:
        result = subprocess.run([SYSTEM_PYTHON, "-c", probe, str(path)], capture_output=True, text=True, timeout=60,
                                env={}, user=65534)
    finally:
        for target, mode in modes.items():
            os.chmod(target, mode)
    assert result.stdout.strip() == "closed", result.stderr
    assert status(env, project)["served"] == served  # type: ignore[index]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a socket another user owns")
def test_a_socket_that_is_not_private_is_not_used(home: Path) -> None:
    env = engine_env(home)
    path = paths.socket_path(env)
    paths.make_private_dir(path.parent)
    with socket.socket(socket.AF_UNIX) as impostor:
        impostor.bind(str(path))
        os.chown(path, 65534, 65534)
        result = run(["-p", "hi", "--model", "scripted"], env, home)
    assert result.returncode == 0, result.stderr
    assert "scripted model" in result.stdout  # run here instead
    assert "not using the engine" in result.stderr and "another user" in result.stderr


def test_by_default_the_first_run_starts_the_engine_for_the_next(home: Path) -> None:
    env = engine_env(home)
    del env["ANVIL_ENGINE"]
    with contextlib.ExitStack() as cleanup:
        result = run(["-p", "hi", "--model", "scripted"], env, home)
        cleanup.callback(subprocess.run, client("engine", "stop"), env=env, capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "scripted model" in result.stdout
        wait_for(lambda: status(env, home) is not None, "the engine to be warm")
        served = status(env, home)["served"]  # type: ignore[index]
        assert run(["-p", "hi", "--model", "scripted"], env, home).returncode == 0
        assert status(env, home)["served"] == served + 1  # type: ignore[index, operator]


def test_without_an_engine_everything_runs_here(home: Path) -> None:
    for name, extra in (("off", {"ANVIL_ENGINE": "off"}), ("zero", {"ANVIL_ENGINE": "0"}), ("ci", {"CI": "true"})):
        env = engine_env(home / name, **extra)
        result = run(["-p", "hi", "--model", "scripted"], env, home)
        assert result.returncode == 0, result.stderr
        assert "scripted model" in result.stdout
        time.sleep(0.5)
        assert not paths.engine_dir(env).exists()  # and no engine was started for later


def test_stop_ends_the_engine_and_removes_its_socket(home: Path) -> None:
    env = engine_env(home)
    path = paths.socket_path(env)
    paths.make_private_dir(path.parent)
    # An engine with the warm-up left out (a fresh interpreter's idea of it), to keep this test short.
    code = ("import sys, anvil.engine.server as s\n"
            "s.warm_up = lambda: None\n"
            "sys.exit(s.main(sys.argv[1:]))\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), "2"], env=env, stderr=subprocess.PIPE)
    wait_for(lambda: status(env, home) is not None, "the engine to listen", 60)
    stopped = subprocess.run(client("engine", "stop"), env=env, capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0 and "Stopped the engine" in stopped.stdout
    assert proc.wait(timeout=30) == 0
    assert not path.exists()
    told = subprocess.run(client("engine", "status"), env=env, capture_output=True, text=True, timeout=60)
    assert told.returncode == 3 and "No engine is running" in told.stdout
    # and one left alone exits by itself once idle (2 s here), removing its socket
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), "2"], env=env, stderr=subprocess.PIPE)
    assert proc.wait(timeout=60) == 0
    assert not path.exists()
