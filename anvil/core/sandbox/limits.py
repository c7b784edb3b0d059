"""A cap on how many processes (threads included) a sandboxed command may have at once, so a fork bomb that got past
the policy stalls only itself: past the cap, ``fork`` fails in the command and nowhere else.

Two ways, the first that works here is used:

* A pids cgroup for each command (cgroup v2, or the pids hierarchy of cgroup v1): it counts exactly the
  command's processes and threads, for root too. anvil needs a cgroup directory it may make children in: its own
  cgroup or the hierarchy's root (root on most machines; a delegated systemd slice; a container that mounts
  cgroups writable). The sandbox cannot leave it: ``/sys`` is read-only inside.
* ``RLIMIT_NPROC``: the kernel counts every process of the user, so the limit is what the user runs now plus
  the budget, counted at each launch. The kernel ignores it for root, which is why it comes second.

Where neither works, commands run without a cap (:attr:`ProcessLimit.mechanism` is None) and the pid namespace
still ends everything at the command's timeout. The command enters its cgroup (or gets its limit) through a
one-line ``sh``/``prlimit`` launcher that then ``exec``s the sandbox, so its pid, signals and exit status stay
the sandbox's own (also when an editor runs it, over ACP). Should entering the cgroup fail after all (it was
tried when the session started), the command still runs, without the cap: the cap is a second line behind the
policy, and the pid namespace still ends everything at the timeout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: the default cap: far above what builds and test runs use at once (a parallel build, a browser under test)
DEFAULT_MAX_PROCESSES = 2048
#: a command's cgroup left empty this long has ended (or never started): it goes at the next launch
_STALE = 30.0


class ProcessLimit:
    """The cap for one session's commands: found on the first :meth:`wrap`, removed at :meth:`close`."""

    def __init__(self, max_processes: int, session: str) -> None:
        self.max_processes = max_processes
        self.session = "".join(c if c.isalnum() or c in "-_" else "-" for c in session)[:48]
        self._cgroup: Path | None = None
        self._probed = False
        self.mechanism: str | None = None
        self._seq = 0
        self._made: dict[Path, float] = {}

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started under the cap, or as it is where there is no way to cap it."""
        if self.max_processes <= 0:
            return argv
        if not self._probed:
            self._probed = True
            self._cgroup = _session_cgroup(self.session)
            self.mechanism = "cgroup" if self._cgroup else "rlimit" if _rlimit_works() else None
        if self._cgroup is not None:
            procs = self._command_cgroup()
            if procs is not None:
                return ["/bin/sh", "-c", 'echo $$ 2>/dev/null > "$0"; exec "$@"', str(procs), *argv]
        if self.mechanism == "rlimit":
            return _with_rlimit(argv, _user_tasks() + self.max_processes)
        return argv

    def _command_cgroup(self) -> Path | None:
        """A fresh child cgroup with the cap; the finished commands' empty ones are removed on the way."""
        assert self._cgroup is not None
        self._sweep(time.monotonic() - _STALE)
        self._seq += 1
        child = self._cgroup / str(self._seq)
        try:
            child.mkdir()
            (child / "pids.max").write_text(str(self.max_processes))
        except OSError:
            return None
        self._made[child] = time.monotonic()
        return child / "cgroup.procs"

    def _sweep(self, made_before: float) -> None:
        """Remove the commands' cgroups made before then that are empty: a running command's stays, and one made
        just now, whose command may not have entered it yet, too (commands can start side by side)."""
        for child, made in list(self._made.items()):
            if made < made_before:
                with contextlib.suppress(OSError):
                    child.rmdir()  # only an empty cgroup can go
                    del self._made[child]

    def close(self) -> None:
        """The session ends (its commands have): the cgroups go."""
        if self._cgroup is not None:
            self._sweep(float("inf"))
            with contextlib.suppress(OSError):
                for child in self._cgroup.iterdir():  # left by a session that ended before its commands did
                    if child.is_dir():
                        with contextlib.suppress(OSError):
                            child.rmdir()
                self._cgroup.rmdir()
            self._cgroup = None


def _cgroup_dirs() -> list[Path]:
    """Where this process could make a pids cgroup: its own cgroup, then the root, of the v2 or the v1 pids
    hierarchy."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    found: list[Path] = []
    for line in own:
        _, controllers, path = line.split(":", 2)
        wanted = "cgroup2" if controllers == "" else "pids" if "pids" in controllers.split(",") else None
        mount = _mount_point(mounts, wanted) if wanted else None
        if mount is not None:
            found += [mount / path.lstrip("/"), mount]
    return list(dict.fromkeys(found))


def _mount_point(mountinfo: list[str], wanted: str) -> Path | None:
    for line in mountinfo:
        before, _, after = line.partition(" - ")
        fields, extra = before.split(), after.split()
        if not fields or len(extra) < 3:
            continue
        fstype, options = extra[0], extra[2].split(",")
        if (wanted == "cgroup2" and fstype == "cgroup2") or (fstype == "cgroup" and wanted in options):
            return Path(fields[4])
    return None


def _session_cgroup(session: str) -> Path | None:
    """A cgroup for the session whose children take a pids.max, or None when there is none to be had."""
    if not sys.platform.startswith("linux"):
        return None
    name = f"anvil-{os.getpid()}-{session}"
    for parent in _cgroup_dirs():
        if not (parent / "cgroup.procs").exists():
            continue
        if (parent / "cgroup.subtree_control").exists():  # v2: pids must be handed down to the children
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text("+pids")
        group = parent / name
        try:
            group.mkdir(exist_ok=True)
        except OSError:
            continue
        if (group / "pids.max").exists() and _children_limited(group):
            return group
        with contextlib.suppress(OSError):
            group.rmdir()
    return None


def _children_limited(group: Path) -> bool:
    if (group / "cgroup.subtree_control").exists():
        try:
            (group / "cgroup.subtree_control").write_text("+pids")
        except OSError:
            return False
    return True


def _rlimit_works() -> bool:
    """RLIMIT_NPROC binds here: not root (the kernel exempts it), and there is a way to set it for a command."""
    return os.geteuid() != 0 and (shutil.which("prlimit") is not None or sys.platform == "darwin")


def _with_rlimit(argv: list[str], limit: int) -> list[str]:
    try:
        import resource

        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    except (ImportError, OSError, ValueError):
        hard = -1
    if hard != -1 and hard < limit:
        limit = hard  # only root may raise the hard limit
    prlimit = shutil.which("prlimit")
    if prlimit:
        return [prlimit, f"--nproc={limit}:{limit}", "--", *argv]
    return ["/bin/sh", "-c", f'ulimit -u {limit} && exec "$@"', "sh", *argv]


def _user_tasks() -> int:
    """How many processes (threads, on Linux) this user runs now: what RLIMIT_NPROC is counted against."""
    uid = os.getuid()
    if os.path.isdir("/proc/self/task"):
        count = 0
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid:
                        count += len(os.listdir(f"{entry.path}/task"))
        return count
    try:
        listed = subprocess.run(["ps", "-U", str(uid), "-o", "pid="], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return 1024
    return len(listed.stdout.split())
