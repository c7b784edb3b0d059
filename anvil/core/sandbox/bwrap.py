"""The sandbox on Linux: bubblewrap, from a mount plan.

Everything is read-only (``--ro-bind / /``) except what the plan binds writable; the command gets its own pid
namespace (so nothing it starts outlives it: when it exits or is killed, the kernel ends every process left in
the namespace, ``setsid`` daemons included), its own IPC namespace and, unless the network is allowed, its own
network namespace with only a loopback. All capabilities are dropped, which matters when anvil runs as root:
root keeping ``CAP_SYS_ADMIN`` in the sandbox could remount ``/`` read-write. ``--disable-userns`` stops the
command from making user namespaces of its own, where it would get capabilities back.

The sandbox's own ``/proc`` is writable where the kernel lets the caller write, which for root (even without
capabilities) includes the kernel's settings: ``/proc/sys/kernel/core_pattern`` names a program the kernel runs
as root outside every namespace when a process crashes. So the kernel's knobs (:data:`PROC_READ_ONLY`) are
mounted read-only on top, as container runtimes do; ``/sys`` is already read-only with the rest of ``/``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from anvil.core.sandbox.places import MountPlan

#: Capabilities of this machine's bubblewrap, found once per binary.
_PROBED: dict[str, BwrapSupport] = {}
_BASE = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
_NO_USERNS = ["--unshare-user", "--disable-userns"]
#: what in /proc changes the kernel rather than a process: read-only in the sandbox (those that exist)
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/acpi",
                  "/proc/scsi")


@dataclass(frozen=True)
class BwrapSupport:
    path: str | None
    #: bubblewrap can stop nested user namespaces here (0.8 and later, with user namespaces available)
    disable_userns: bool = False
    #: why there is no working bubblewrap here; None when there is one
    problem: str | None = None


def find_bwrap() -> BwrapSupport:
    """Whether bubblewrap is installed and can make a sandbox here: a trial run of ``true`` in a sandbox
    like the real ones (user namespaces may be switched off, or refused inside a container)."""
    path = shutil.which("bwrap")
    if path is None:
        return BwrapSupport(None, problem="bubblewrap (bwrap) is not installed")
    if path in _PROBED:
        return _PROBED[path]
    trial = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--", "true"]
    problem = ""
    for extra, disable in ((_NO_USERNS, True), ([], False)):
        try:
            done = subprocess.run([path, *_BASE, *extra, *trial], capture_output=True, text=True, timeout=10,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = str(exc)
            continue
        if done.returncode == 0:
            support = BwrapSupport(path, disable_userns=disable)
            break
        problem = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    else:
        support = BwrapSupport(path, problem=f"bubblewrap could not start a sandbox here ({problem})")
    _PROBED[path] = support
    return support


def bwrap_argv(support: BwrapSupport, plan: MountPlan, *, network: bool, cwd: Path,
               command: Sequence[str]) -> list[str]:
    """The full command line that runs ``command`` in the sandbox, starting in ``cwd``."""
    assert support.path is not None
    argv = [support.path, *_BASE]
    if support.disable_userns:
        argv += _NO_USERNS
    if not network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for knob in PROC_READ_ONLY:
        argv += ["--ro-bind-try", knob, knob]
    for mount in plan.mounts:
        if mount.kind == "tmpfs":
            argv += ["--tmpfs", str(mount.dest)]
        elif mount.kind == "dir":
            argv += ["--perms", "0700", "--dir", str(mount.dest)]
        else:
            argv += [f"--{mount.kind}", str(mount.src or mount.dest), str(mount.dest)]
    argv += ["--chdir", str(cwd), "--", *command]
    return argv
