"""Files only the person may read: anvil's data directory is 0700 and everything in it 0600.

Sessions, checkpoints and command logs can hold secrets (a ``.env`` the model edited, a token a command
printed), so they are created private whatever the umask says: directories with :func:`private_dir`, files
with :func:`open_private` or :func:`write_private`. :func:`tighten_tree` brings what an older anvil wrote
(0644 files in 0755 directories) to the same modes, once.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
#: written into a tree once :func:`tighten_tree` went through it, so later starts skip the walk
TIGHTENED_MARK = ".modes-private"


def private_dir(path: Path) -> Path:
    """``path`` as a directory, creating every missing component 0700 (the umask cannot widen it)."""
    missing = []
    current = path
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            continue  # made by someone else meanwhile; tighten_tree brings it in line
        os.chmod(directory, DIR_MODE)  # mkdir's mode passes through the umask
    return path


def open_private(path: Path, flags: int) -> int:
    """``os.open`` with a 0600 mode for a new file, and an existing one narrowed to 0600 too."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        pass  # a file that is not ours to change keeps its mode; the 0700 directory still hides it
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to a new or truncated 0600 file (partial bytes are removed again on failure)."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    os.close(fd)


def replace_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a 0600 temporary file and a rename: readers see old or new, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    write_private(tmp, data)
    try:
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def tighten_tree(root: Path) -> int:
    """Make ``root`` and what is directly in it private and, the first time, everything under it: directories
    0700, files 0600.

    Cheap on every later call: one directory listing (files other code creates there, such as input histories,
    are narrowed as they appear) and one ``stat`` of the mark. Returns how many entries were narrowed. Symlinks
    are left alone (their target is not anvil's to change).
    """
    if not root.is_dir():
        return 0
    narrowed = _narrow(root, DIR_MODE)
    mark = root / TIGHTENED_MARK
    if mark.exists():
        with contextlib.suppress(OSError):
            for child in os.scandir(root):
                narrowed += _narrow(Path(child.path), DIR_MODE if child.is_dir(follow_symlinks=False) else FILE_MODE)
        return narrowed
    for current, dirs, files in os.walk(root):
        base = Path(current)
        for name in dirs:
            narrowed += _narrow(base / name, DIR_MODE)
        for name in files:
            narrowed += _narrow(base / name, FILE_MODE)
    with contextlib.suppress(OSError):
        write_private(mark, b"anvil narrowed the modes of everything here to 0700 directories and 0600 files\n")
    return narrowed


def _narrow(path: Path, mode: int) -> int:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) & ~mode == 0:
            return 0
        os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
    except OSError:
        return 0
    return 1
