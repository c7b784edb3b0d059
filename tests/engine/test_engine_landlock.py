"""A client confined by Landlock is never served by the engine, even when /proc shows nothing different.

Landlock needs ``no_new_privs``; an engine started from a terminal that already has it (a container, a
sandboxed shell) has the same ``NoNewPrivs`` as a Landlock-confined client, and ``/proc`` shows no Landlock
domain. What tells them apart is the kernel's own rule: a confined process may not read an unconfined one's
``/proc/<pid>/environ``. These tests make real Landlock domains (the kernel's syscalls through ctypes).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from anvil.engine import paths
from anvil.engine.reach import PROTOCOL
from tests.engine.test_engine import client, engine_env, short_home, status, wait_for

_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP = 38, 24
_LAST_CAPABILITY = int(Path("/proc/sys/kernel/cap_last_cap").read_text()) if sys.platform == "linux" else 0
_LANDLOCK_CREATE_RULESET, _LANDLOCK_RESTRICT_SELF = 444, 446  # x86_64 and aarch64 alike (the generic table)
_LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11  # a right nobody here uses: the domain exists, the run is unhindered
_LIBC = ctypes.CDLL(None, use_errno=True)


def no_new_privs() -> None:
    """In a child before exec: no_new_privs and, for root, no capabilities after the exec (a process with them is
    not confined by Landlock's rule on reading other processes, and could ptrace its way out anyway)."""
    if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    for capability in range(_LAST_CAPABILITY + 1):
        if _LIBC.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 and os.geteuid() == 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def landlocked() -> None:
    """In a child before exec: no_new_privs, then a Landlock domain of its own."""
    no_new_privs()
    attr = ctypes.c_uint64(_LANDLOCK_ACCESS_FS_MAKE_BLOCK)
    ruleset = _LIBC.syscall(_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), 0)
    if ruleset < 0 or _LIBC.syscall(_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
        raise OSError(ctypes.get_errno(), "Landlock")
    os.close(ruleset)


def _landlock_works() -> bool:
    probe = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=landlocked, capture_output=True, check=False)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(sys.platform != "linux" or not _landlock_works(),
                                reason="needs a Linux kernel with Landlock")

#: a client written by hand: what a program inside the confinement could send instead of running anvil
_PROBE = """
import array, json, os, socket, struct, sys
conn = socket.socket(socket.AF_UNIX)
conn.connect(sys.argv[1])
pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
try:
    proof = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
except OSError:
    proof = os.open("/proc/self/environ", os.O_RDONLY)  # the next best thing: its own
body = json.dumps({"protocol": int(sys.argv[2]), "kind": "run", "argv": ["--version"], "cwd": "/", "env": {},
                   "umask": 18}).encode()
conn.sendmsg([struct.pack("!I", len(body)) + body],
             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2, proof][:int(sys.argv[3])]))])
head = conn.recv(4)
print(conn.recv(struct.unpack("!I", head)[0]).decode() if head else "{}")
"""


@pytest.fixture(scope="module")
def engine_without_new_privs() -> Iterator[tuple[dict[str, str], Path]]:
    """An engine started from a process with no_new_privs (its warm-up left out, to keep the module short)."""
    with short_home() as home:
        env = engine_env(home)
        path = paths.socket_path(env)
        paths.make_private_dir(path.parent)
        code = "import sys, anvil.engine.server as s\ns.warm_up = lambda: None\nsys.exit(s.main(sys.argv[1:]))\n"
        log = open(path.parent / "engine.log", "ab")  # noqa: SIM115 - the engine writes it until it stops
        proc = subprocess.Popen([sys.executable, "-c", code, str(path), "120"], env=env, stderr=log,
                                preexec_fn=no_new_privs)
        try:
            wait_for(lambda: status(env, home) is not None, "the engine to listen", 60)
            yield env, home
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


def _hand_made_request(env: dict[str, str], home: Path, confine: Callable[[], None], fds: int = 4) -> dict[str, object]:
    result = subprocess.run([sys.executable, "-c", _PROBE, str(paths.socket_path(env)), str(PROTOCOL), str(fds)],
                            capture_output=True, text=True, timeout=60, preexec_fn=confine, cwd=home)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])  # the engine's reply; a served run's own output follows


def test_the_engine_serves_a_client_as_free_as_itself(engine_without_new_privs: tuple[dict[str, str], Path]) -> None:
    env, home = engine_without_new_privs
    reply = _hand_made_request(env, home, no_new_privs)
    assert "pid" in reply, reply  # the same bounds, and it could read the engine's process: served


def test_a_landlocked_client_cannot_prove_it_and_is_refused(
        engine_without_new_privs: tuple[dict[str, str], Path]) -> None:
    env, home = engine_without_new_privs
    served = status(env, home)["served"]  # type: ignore[index]
    reply = _hand_made_request(env, home, landlocked)
    assert reply.get("refused") == "context", reply
    assert "may not read the engine's process" in str(reply.get("reason"))
    assert status(env, home)["served"] == served  # type: ignore[index]


def test_a_request_without_the_proof_is_refused(engine_without_new_privs: tuple[dict[str, str], Path]) -> None:
    env, home = engine_without_new_privs
    reply = _hand_made_request(env, home, no_new_privs, fds=3)
    assert reply.get("refused") == "context" and "did not prove" in str(reply.get("reason")), reply


def test_anvil_run_under_landlock_runs_in_its_own_confinement(
        engine_without_new_privs: tuple[dict[str, str], Path]) -> None:
    env, home = engine_without_new_privs
    served = status(env, home)["served"]  # type: ignore[index]
    result = subprocess.run(client("-p", "hi", "--model", "scripted"), cwd=home, env=env, capture_output=True,
                            text=True, timeout=120, preexec_fn=landlocked)
    assert result.returncode == 0, result.stderr
    assert "scripted model" in result.stdout  # it ran, in its own process
    assert status(env, home)["served"] == served  # type: ignore[index]
