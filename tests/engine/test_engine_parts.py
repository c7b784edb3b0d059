"""The engine's parts on their own: its messages, its paths, its refusals."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from anvil.config import data_dir
from anvil.engine import paths, peer, server, wire
from anvil.engine.client import engine_wanted


def test_a_request_carries_its_descriptors() -> None:
    left, right = socket.socketpair()
    read_end, write_end = os.pipe()
    with left, right:
        wire.send(left, {"kind": "run", "env": {"X": "y" * 200_000}}, [read_end, write_end, write_end])
        message, fds = wire.receive(right, with_fds=True)
        assert message == {"kind": "run", "env": {"X": "y" * 200_000}}
        assert len(fds) == 3
        os.write(fds[1], b"through the passed descriptor")
        assert os.read(read_end, 100) == b"through the passed descriptor"
        assert wire.peer_uid(right) == os.getuid()
    for fd in (read_end, write_end, *fds):
        os.close(fd)


def test_a_closed_connection_is_not_a_message() -> None:
    left, right = socket.socketpair()
    left.close()
    with right, pytest.raises(wire.WireError):
        wire.receive(right)


def test_the_data_directory_is_the_one_settings_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert paths.data_dir() == data_dir()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.data_dir() == data_dir()


def test_engines_differ_by_data_directory_and_import_settings(tmp_path: Path) -> None:
    one = {"XDG_DATA_HOME": str(tmp_path / "one")}
    assert paths.socket_path(one) != paths.socket_path({"XDG_DATA_HOME": str(tmp_path / "two")})
    assert paths.socket_path(one) != paths.socket_path({**one, "LITELLM_LOG": "DEBUG"})
    assert paths.socket_path(one) == paths.socket_path({**one, "OPENAI_API_KEY": "sk-1"})  # keys are per run
    deep = {"XDG_DATA_HOME": str(tmp_path / ("d" * 120))}
    assert len(os.fsencode(paths.socket_path(deep))) <= paths.SOCKET_PATH_MAX


def test_the_engine_process_gets_no_keys() -> None:
    environ = {"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "LITELLM_LOG": "INFO", "LITELLM_MASTER_KEY": "k",
               "GITHUB_TOKEN": "t", "HOME": "/h"}
    assert paths.engine_environment(environ) == {"PATH": "/bin", "HOME": "/h", "LITELLM_LOG": "INFO"}


def test_a_directory_others_may_enter_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "engine"
    paths.make_private_dir(directory)
    assert directory.stat().st_mode & 0o777 == 0o700
    directory.chmod(0o755)
    with pytest.raises(paths.EngineUnsafe, match="open to other users"):
        paths.check_private(directory, want_dir=True)
    link = tmp_path / "link"
    link.symlink_to(directory)
    with pytest.raises(paths.EngineUnsafe, match="not a directory"):
        paths.check_private(link, want_dir=True)


def test_the_engine_is_on_unless_turned_off_and_quick_commands_skip_it() -> None:
    for environ in ({}, {"ANVIL_ENGINE": ""}, {"ANVIL_ENGINE": "on"}, {"ANVIL_ENGINE": "1"}):
        assert engine_wanted(["-p", "hi"], environ)
        assert engine_wanted([], environ)
    for args in (["--version"], ["--help"], ["sessions"], ["trust"], ["acp"], ["-p", "x", "-h"]):
        assert not engine_wanted(args, {})
    for value in ("off", "0", "no", "false", "OFF", " Off "):
        assert not engine_wanted(["-p", "hi"], {"ANVIL_ENGINE": value})


def test_the_engine_is_linux_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")  # no /proc to check a client by: it would refuse every run
    assert not engine_wanted(["-p", "hi"], {"ANVIL_ENGINE": "on"})


def test_a_process_in_the_engines_own_context_is_served_and_its_limits_read() -> None:
    import resource

    left, right = socket.socketpair()
    with left, right:
        assert peer.refusal(left) is None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert peer.limits(os.getpid())["RLIMIT_NOFILE"] == [soft, hard]
    assert peer.context(os.getpid()) == peer.context("self")


def test_another_context_is_named_in_the_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    real = peer.context

    def sandboxed(pid: int | str) -> dict[str, str]:
        found = real(pid)
        if pid != "self":
            found.update({"NoNewPrivs": "1", "ns/mnt": "mnt:[1]"})
        return found

    monkeypatch.setattr(peer, "context", sandboxed)
    left, right = socket.socketpair()
    with left, right:
        assert peer.refusal(left) == "the client runs with other bounds than the engine (NoNewPrivs, ns/mnt)"


def test_a_changed_source_file_makes_the_engine_refuse_and_stop(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    engine = server.Engine(tmp_path / "e.sock")
    engine.fingerprint = {"anvil/x.py": 1.0}
    monkeypatch.setattr(server, "source_fingerprint", lambda: {"anvil/x.py": 2.0})
    left, right = socket.socketpair()
    with left, right:
        engine._handle(left, {"protocol": 1, "kind": "run"}, [0, 1, 2, 0])
        reply, _ = wire.receive(right)
    assert reply["refused"] == "stale"
    assert engine.stopping


def test_only_the_engine_s_own_environ_proves_a_client_may_read_it(tmp_path: Path) -> None:
    own = os.open(f"/proc/{os.getpid()}/environ", os.O_RDONLY)
    via_self = os.open("/proc/self/environ", os.O_RDONLY)  # the same file, named by the kernel as /proc/self/...
    lookalike = tmp_path / "environ"
    lookalike.write_bytes(Path("/proc/self/environ").read_bytes())
    forged = os.open(lookalike, os.O_RDONLY)
    another = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        other = os.open(f"/proc/{another.pid}/environ", os.O_RDONLY)
        assert peer.unproven([0, 1, 2, own]) is None
        assert peer.unproven([0, 1, 2, via_self]) is None
        assert peer.unproven([0, 1, 2]) == "the run did not prove it may read the engine's process"
        for fd in (forged, other):
            assert "may not read the engine's process" in str(peer.unproven([0, 1, 2, fd]))
        os.close(other)
    finally:
        another.kill()
        another.wait()
        for fd in (own, via_self, forged):
            os.close(fd)


def test_a_run_in_the_background_of_its_terminal_is_not_handed_over() -> None:
    import pty

    probe = ("import fcntl, os, sys, termios\n"
             "os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"  # the terminal is this session's, like a shell's
             "if sys.argv[1] == 'background':\n"
             "    os.setpgid(0, 0) if os.fork() == 0 else (os.wait(), sys.exit(0))\n"  # a job that is not in front
             "from anvil.engine.handoff import in_the_foreground\n"
             "print(sys.argv[1], in_the_foreground(), file=sys.stderr)\n")
    for where, expected in (("foreground", True), ("background", False)):
        leader, follower = pty.openpty()
        result = subprocess.run([sys.executable, "-c", probe, where], stdin=follower, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, timeout=60)
        os.close(leader)
        os.close(follower)
        assert result.stderr.strip() == f"{where} {expected}", result.stderr
