"""A full filesystem under one directory, for tests: two ways, the real one where the machine allows it.

:class:`FullDisk` fails writes at the OS boundary the way a full filesystem does (``ENOSPC`` from
``os.write``, from ``os.mkdir`` and from ``os.open`` creating a file), only for paths under ``root``, and only
while ``full`` is set. It works everywhere, in the test's own process.

:func:`tmpfs_shell` runs a shell script in a private mount namespace with a small tmpfs mounted (``unshare
--user --map-root-user --mount``): a real filesystem that really fills up. None where the kernel or the
container does not allow it.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest


class FullDisk:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = str(root.resolve())
        self.full = False
        self.refused = 0  # writes refused so far
        real_write, real_mkdir, real_open = os.write, os.mkdir, os.open

        def under_root(path: str) -> bool:
            return path == self.root or path.startswith(self.root + os.sep)

        def fd_path(fd: int) -> str:
            try:
                return os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return ""

        def write(fd: int, data: Any) -> int:
            if self.full and under_root(fd_path(fd)):
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)

        def mkdir(path: Any, mode: int = 0o777, *args: Any, **kwargs: Any) -> None:
            if self.full and under_root(os.path.abspath(os.fspath(path))):
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))
            real_mkdir(path, mode, *args, **kwargs)

        def open_(path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
            absolute = os.path.abspath(os.fspath(path))
            if self.full and flags & os.O_CREAT and under_root(absolute) and not os.path.exists(absolute):
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))
            return real_open(path, flags, mode, *args, **kwargs)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "mkdir", mkdir)
        monkeypatch.setattr(os, "open", open_)


def tmpfs_available() -> bool:
    if shutil.which("unshare") is None or not Path("/proc/self/fd").is_dir():
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || "
                            "mount -t tmpfs -o size=64k tmpfs /tmp"], capture_output=True, timeout=30)
    return probe.returncode == 0


def tmpfs_shell(mountpoint: Path, size_kb: int, script: str, env: dict[str, str],
                timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) with a ``size_kb`` tmpfs mounted at ``mountpoint`` in its own mount namespace."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    wrapped = f'mount -t tmpfs -o size={size_kb}k tmpfs "{mountpoint}" || exit 97\n{script}'
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-ec", wrapped],
                          capture_output=True, text=True, timeout=timeout, env=env)
