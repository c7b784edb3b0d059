"""A job's directory: plain files anvil and the model both write, read and written without following links.

The directory lies inside the project (commands may write there too: it is work, not configuration), so a file
in it may have been swapped for a symbolic link by the time anvil reads or writes it. Every access walks from the
project root without following links (:mod:`anvil.core.tools.files.safe_io`): a link is refused, never
followed, and a write replaces the name itself, atomically (the old file or the new one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
from pathlib import Path

from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.safe_io import check_regular, located, open_regular, read_all
from anvil.core.tools.protected import WHY, classify
from anvil.core.workflows.base import JobError

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def new_job_id() -> str:
    """Sortable by time, unique without coordination (like session ids)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


class JobFiles:
    """The files of one job directory ``directory`` (absolute, inside the project ``root``)."""

    def __init__(self, root: Path, directory: Path) -> None:
        if not directory.is_relative_to(root) or directory == root:
            raise JobError(f"A job's directory must be inside the project ({root}), not {directory}.")
        kind = classify(directory / "state.yaml", [], None)
        if kind is not None:  # never a job in .git or in .anvil's hooks or agents, whatever the id or the setting
            raise JobError(f"{directory} cannot hold a job: it is {kind} ({WHY[kind]}).")
        self.root = root
        self.dir = directory

    @property
    def shown(self) -> str:
        """The directory as the person types it: relative to the project."""
        return self.display("")

    def display(self, name: str) -> str:
        path = self.dir / name if name else self.dir
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def exists(self) -> bool:
        return self.dir.is_dir() and not self.dir.is_symlink()

    def read(self, name: str) -> str | None:
        """The text of file ``name`` (None when it does not exist); JobError when it cannot be read safely."""
        shown = self.display(name)
        try:
            with located(self.dir / name, [self.root], shown) as location:
                fd, info = open_regular(location, shown)
                try:
                    data = read_all(fd, info.st_size)
                finally:
                    os.close(fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except ToolError as exc:
            raise JobError(str(exc)) from None
        except OSError as exc:
            raise JobError(f"Cannot read {shown}: {exc.strerror or exc}.") from None
        return data.decode("utf-8", errors="replace")

    def write(self, name: str, text: str) -> None:
        """Write file ``name`` (directories made as needed), replacing it whole; JobError when it cannot be."""
        shown = self.display(name)
        try:
            with located(self.dir / name, [self.root], shown, create_dirs=True) as location:
                temp = f".{location.name}.{secrets.token_hex(4)}.tmp"
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644,
                             dir_fd=location.dir_fd)
                try:
                    try:
                        view = memoryview(text.encode("utf-8"))
                        while view:
                            view = view[os.write(fd, view):]
                        check_regular(os.fstat(fd), shown)
                    finally:
                        os.close(fd)
                    os.rename(temp, location.name, src_dir_fd=location.dir_fd, dst_dir_fd=location.dir_fd)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temp, dir_fd=location.dir_fd)
                    raise
        except ToolError as exc:
            raise JobError(str(exc)) from None
        except OSError as exc:
            raise JobError(f"Cannot write {shown}: {exc.strerror or exc}.") from None

    def remove(self, name: str) -> None:
        """Remove file ``name`` if it is there (a link is removed as a link, never followed)."""
        shown = self.display(name)
        try:
            with located(self.dir / name, [self.root], shown) as location:
                os.unlink(location.name, dir_fd=location.dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return
        except ToolError as exc:
            raise JobError(str(exc)) from None
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise JobError(f"Cannot remove {shown}: {exc.strerror or exc}.") from None
