"""Opening and replacing files without following symbolic links, relative to a directory descriptor.

A path is checked (inside the project, not protected) and then used; a symbolic link swapped into it between
the two would send the read or the write elsewhere. So the checked, fully resolved path is walked one
component at a time from its base directory (the project root or an allowed directory) with ``O_NOFOLLOW``,
and the file is opened, created, renamed and linked relative to the directory descriptor the walk ends at:
the path that was checked is the path that is used, or the operation fails.

Files are never rewritten in place: new content goes to a temporary file beside the target, created with at
most the target's permissions (0600 while it fills, for an existing file; a new file's as the umask makes
them), and is renamed over it, so readers and crashes see the old file or the new one. Temporary files are
named ``.<name>.<random>.anvil-tmp`` and removed on any error; what a killed process leaves is cleaned up by
:mod:`anvil.core.tools.files.leftovers`.

A file with more than one hard link is refused unless all its other names are found inside the directories the
file tools work in (:mod:`anvil.core.tools.files.hard_links`): a name outside would make the file an outside one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.hard_links import check_links

TEMP_SUFFIX = ".anvil-tmp"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
#: a name's room in the temporary file's (names are limited to 255 bytes; the rest is dot, token and suffix)
_TEMP_NAME_ROOM = 200
_LINK_UNSUPPORTED = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV, errno.ENOSYS})


@dataclass
class Location:
    """A file's directory, open, and its name in it: where every operation on the file happens."""

    dir_fd: int
    name: str
    path: Path
    #: the directories the walk could start from (the project, the allowed directories), resolved
    bases: tuple[Path, ...] = ()

    def close(self) -> None:
        os.close(self.dir_fd)


def _base_of(path: Path, resolved: Sequence[Path]) -> Path:
    for base in sorted(resolved, key=lambda base: len(base.parts), reverse=True):
        if path == base or path.is_relative_to(base):
            return base
    raise ValueError(f"{path} is in none of the base directories")  # resolve_path guarantees one


def _moved(display: str, part: str) -> ToolError:
    return ToolError(f"{display} changed while anvil was using it: '{part}' on its way is now a symbolic link or "
                     "not a directory. Nothing was read or written. Check the path (list_files) and retry.")


@contextlib.contextmanager
def located(path: Path, bases: Sequence[Path], display: str, *, create_dirs: bool = False) -> Iterator[Location]:
    """``path`` (resolved, inside one of ``bases``) as an open directory and a name, walked without following
    links. ``create_dirs`` makes missing directories on the way; otherwise a missing one raises
    FileNotFoundError."""
    resolved = tuple(base.resolve() for base in bases)
    base = _base_of(path, resolved)
    parts = path.relative_to(base).parts
    if not parts:
        raise ToolError(f"{display} is a directory, not a file. Use list_files to see what it contains.")
    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _enter(fd, part, display, create_dirs)
            os.close(fd)
            fd = inner
        location = Location(fd, parts[-1], path, resolved)
    except BaseException:
        os.close(fd)
        raise
    try:
        yield location
    finally:
        location.close()


def _enter(fd: int, part: str, display: str, create: bool) -> int:
    """The directory ``part`` inside ``fd``, opened (and made first if ``create``)."""
    try:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)  # the umask decides, as for any directory
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
            raise _moved(display, part) from None
        raise  # ENOTDIR for a plain file on the way: the path does not exist as given


def _is_link(fd: int, part: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return True  # gone again: it is moving under us


def open_regular(location: Location, display: str) -> tuple[int, os.stat_result]:
    """The file at ``location`` opened for reading, and its status; refuses links, non-files and files with
    hard links outside the location's bases. Raises FileNotFoundError when there is none."""
    try:
        fd = os.open(location.name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC,
                     dir_fd=location.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _moved(display, location.name) from None
        if exc.errno == errno.ENXIO:  # a socket
            raise ToolError(f"{display} is not a regular file (it is a socket); file tools only work on regular "
                            "files.") from None
        raise
    try:
        info = os.fstat(fd)
        check_regular(info, display)
        check_links(info, location.bases, display)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def check_regular(info: os.stat_result, display: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{display} is a directory, not a file. Use list_files to see what it contains.")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{display} is not a regular file (it is a device, socket or pipe); file tools only work "
                        "on regular files.")


def read_all(fd: int, size_hint: int = 0) -> bytes:
    chunks, size = [], 0
    while chunk := os.read(fd, max(size_hint - size, 0) + 65536):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def temp_name(name: str) -> str:
    """A fresh temporary name beside ``name``, recognisable as anvil's."""
    stem = name.encode()[:_TEMP_NAME_ROOM].decode(errors="ignore")
    return f".{stem}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def replace_file(location: Location, data: bytes, existing: os.stat_result | None, display: str,
                 temp: str) -> os.stat_result:
    """Put ``data`` at ``location`` through the temporary file ``temp``: the old file or the new one, never
    half. ``existing`` is the file as it was read (None: there was none); a file changed since, or created
    meanwhile, is left alone (ToolError). Returns the new file's status."""
    # An existing file's content may be a secret: the temporary file is the owner's alone until it is complete.
    mode = 0o600 if existing is not None else 0o666
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | getattr(os, "O_BINARY", 0),
                 mode, dir_fd=location.dir_fd)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)  # the rename must not land before the data does
            if existing is not None:
                if hasattr(os, "fchown"):
                    with contextlib.suppress(OSError):  # only root may give a file away; others keep theirs
                        os.fchown(fd, existing.st_uid, existing.st_gid)
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            info = os.fstat(fd)
        finally:
            os.close(fd)
        _check_unchanged(location, existing, display)
        _put_in_place(location, temp, existing is None, display)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=location.dir_fd)
        raise
    return info


def remove_file(location: Location, existing: os.stat_result, display: str) -> None:
    """Remove the file at ``location``, as it was read (``existing``); one changed since is left alone (ToolError)."""
    _check_unchanged(location, existing, display)
    os.unlink(location.name, dir_fd=location.dir_fd)


def current_status(location: Location) -> os.stat_result | None:
    """What is at ``location`` now, links not followed; None when nothing is."""
    try:
        return os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _check_unchanged(location: Location, existing: os.stat_result | None, display: str) -> None:
    now = current_status(location)
    if existing is None and now is None:
        return
    if existing is None:
        raise ToolError(f"{display} was created by someone else while anvil was writing it. Nothing was written; "
                        "read it with read_file and redo the change against its content.")
    same = now is not None and all(getattr(now, key) == getattr(existing, key) for key in (
        "st_ino", "st_dev", "st_size", "st_mtime_ns", "st_ctime_ns"))
    if not same:
        raise ToolError(f"{display} changed on disk while anvil was writing it. Nothing was written; read it again "
                        "with read_file and redo the change against its current content.")


def _put_in_place(location: Location, temp: str, new: bool, display: str) -> None:
    dir_fd = location.dir_fd
    if new:
        # A hard link fails if the name was taken meanwhile, where a rename would silently replace it.
        try:
            os.link(temp, location.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            raise ToolError(f"{display} was created by someone else while anvil was writing it. Nothing was "
                            "written; read it with read_file and redo the change against its content.") from None
        except OSError as exc:
            if exc.errno not in _LINK_UNSUPPORTED:
                raise
        else:
            os.unlink(temp, dir_fd=dir_fd)
            return
    os.rename(temp, location.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
