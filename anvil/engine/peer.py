"""Who is at the other end of the engine's socket: only a process in the engine's own context is served.

The socket is private to the user, but a process of the same user may run with less than the user has: inside
a sandbox (anvil's own bubblewrap sandbox for the model's commands, a container, firejail), under a seccomp
filter or ``no_new_privs``, with fewer groups or capabilities, another LSM label, tighter resource limits or
in a cgroup with a memory limit. A run the engine forks has the engine's context, so serving such a process
would hand it more than it has. The engine therefore reads the client's context from ``/proc/<pid>`` (the
pid is the kernel's word, ``SO_PEERCRED``, not the client's) and serves it only when namespaces, credentials,
groups, capabilities, seccomp, ``no_new_privs``, LSM label and cgroups are all the engine's own; its resource
limits are taken from there too (a run gets the client's, never the engine's). Anything that cannot be read
is a refusal, and a refused client runs the command itself.

What ``/proc`` does not show cannot be compared: a Landlock domain is the known case. The kernel answers that
one in another way. A process confined by Landlock (or by any LSM that guards ``ptrace``) may not read the memory
or environment of a process outside its confinement, and opening ``/proc/<pid>/environ`` is checked as such a
read. So a client must send, beside its streams, a descriptor it opened on the engine's own
``/proc/<engine pid>/environ``. Only a client at least as free as the engine can open it
(:func:`unproven`), and a client inside a Landlock domain the engine is not in cannot.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import struct
from pathlib import Path

#: /proc/<pid>/status lines that describe what a process may do
STATUS_FIELDS = ("Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "Seccomp_filters", "CapInh", "CapPrm", "CapEff",
                 "CapBnd", "CapAmb")
NAMESPACES = ("mnt", "pid", "net", "user", "ipc", "uts", "cgroup", "time")
#: /proc/<pid>/limits rows and the limits they are
LIMIT_ROWS = {"Max cpu time": "RLIMIT_CPU", "Max file size": "RLIMIT_FSIZE", "Max data size": "RLIMIT_DATA",
              "Max stack size": "RLIMIT_STACK", "Max core file size": "RLIMIT_CORE", "Max resident set": "RLIMIT_RSS",
              "Max processes": "RLIMIT_NPROC", "Max open files": "RLIMIT_NOFILE", "Max locked memory":
              "RLIMIT_MEMLOCK", "Max address space": "RLIMIT_AS", "Max file locks": "RLIMIT_LOCKS",
              "Max pending signals": "RLIMIT_SIGPENDING", "Max msgqueue size": "RLIMIT_MSGQUEUE",
              "Max nice priority": "RLIMIT_NICE", "Max realtime priority": "RLIMIT_RTPRIO",
              "Max realtime timeout": "RLIMIT_RTTIME"}


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket, as the kernel recorded them."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return pid, uid, gid


def context(pid: int | str) -> dict[str, str]:
    """What bounds process ``pid`` (``"self"`` for this one); OSError when it cannot be read."""
    proc = Path("/proc") / str(pid)
    found: dict[str, str] = {}
    for line in (proc / "status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in STATUS_FIELDS:
            found[name] = " ".join(value.split())
    for name in NAMESPACES:
        with contextlib.suppress(FileNotFoundError):  # a namespace kind this kernel does not have
            found[f"ns/{name}"] = os.readlink(proc / "ns" / name)
    found["cgroup"] = (proc / "cgroup").read_text()
    with contextlib.suppress(FileNotFoundError, PermissionError, OSError):
        found["lsm"] = (proc / "attr" / "current").read_text().strip("\0\n ")
    if "Uid" not in found:
        raise OSError(f"no credentials in {proc / 'status'}")
    return found


def refusal(sock: socket.socket) -> str | None:
    """Why the client at ``sock`` must not be served (None: it is in the engine's own context)."""
    pid, uid, _gid = peer_credentials(sock)
    if uid != os.getuid():
        return "another user"
    if pid <= 0:
        return "the client is in another pid namespace"
    try:
        theirs, ours = context(pid), context("self")
    except OSError as exc:
        return f"the client's process cannot be inspected ({exc})"
    differing = sorted(name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name))
    if differing:
        return f"the client runs with other bounds than the engine ({', '.join(differing)})"
    return None


def unproven(fds: list[int]) -> str | None:
    """Why the descriptors of a run do not prove that the client may read the engine's process (None: they do).

    The fourth descriptor must be this process's ``/proc/<pid>/environ``, opened by the client: the same file
    (device and inode), under the path the kernel names for it, reading what this process's own environment
    reads. The client cannot have opened it if an LSM (Landlock among them) confines it and not the engine.
    """
    if len(fds) != 4:
        return "the run did not prove it may read the engine's process"
    proof, own = fds[3], f"/proc/{os.getpid()}/environ"
    try:
        named, found, expected = os.readlink(f"/proc/self/fd/{proof}"), os.fstat(proof), os.stat(own)
        same_text = os.pread(proof, 1 << 16, 0) == Path("/proc/self/environ").read_bytes()[:1 << 16]
    except OSError as exc:
        return f"the client's proof cannot be checked ({exc})"
    if named != own or (found.st_dev, found.st_ino) != (expected.st_dev, expected.st_ino) or not same_text:
        return "the client may not read the engine's process (a Landlock domain or another confinement)"
    return None


def limits(pid: int) -> dict[str, list[int]]:
    """The resource limits of process ``pid`` (soft, hard), from /proc/<pid>/limits; OSError when unreadable."""
    found: dict[str, list[int]] = {}
    for line in (Path("/proc") / str(pid) / "limits").read_text().splitlines()[1:]:
        for row, name in LIMIT_ROWS.items():
            if line.startswith(row + " ") and hasattr(resource, name):
                soft, hard = line[len(row):].split()[:2]
                found[name] = [_limit(soft), _limit(hard)]
    return found


def _limit(text: str) -> int:
    return resource.RLIM_INFINITY if text == "unlimited" else int(text)
