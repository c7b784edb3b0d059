"""Temporary files a killed anvil left beside the files it was writing: noted while they exist, cleaned up later.

Before a file tool creates a temporary file, it notes the file's path in ``<data dir>/pending-writes/`` (one
small entry per write, owner-only) and removes the note once the temporary file is renamed into place or
deleted. A process killed in between (SIGKILL, a power cut) leaves the note behind, so the next anvil started
in that project finds the partial file without searching the tree, removes it, and says so. A note whose
process still runs belongs to another anvil at work and is left alone; a path that no longer holds a regular
file of this user with anvil's temporary name is reported, never deleted.

Notes are best effort: when the data directory cannot be written (a full disk), the write goes ahead without
one, since the temporary file is still removed on every error the process lives through.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from anvil.core.private_files import private_dir
from anvil.core.tools.files.safe_io import TEMP_SUFFIX

PENDING_DIR = "pending-writes"


@contextlib.contextmanager
def pending_write(data_dir: Path, root: Path, temp: Path) -> Iterator[None]:
    """Note ``temp`` (a temporary file about to be created for a write in project ``root``) while the block runs."""
    note = _write_note(data_dir / PENDING_DIR, {"pid": os.getpid(), "root": str(root), "temp": str(temp)})
    try:
        yield
    finally:
        if note is not None:
            with contextlib.suppress(OSError):
                note.unlink()


def _write_note(directory: Path, entry: dict[str, object]) -> Path | None:
    try:
        private_dir(directory)
        note = directory / f"{os.getpid()}-{secrets.token_hex(6)}.json"
        fd = os.open(note, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle)
        return note
    except OSError:
        return None


def clean_leftovers(data_dir: Path, root: Path) -> list[str]:
    """Remove the temporary files that killed anvil processes left in project ``root``; returns notices for
    the person (what was removed, and what was found but left alone)."""
    directory = data_dir / PENDING_DIR
    try:
        notes = sorted(directory.glob("*.json"))
    except OSError:
        return []
    removed: list[str] = []
    left: list[str] = []
    root = root.resolve()
    for note in notes:
        entry = _read_note(note)
        if entry is None or entry.get("root") != str(root):
            continue
        if _running(entry.get("pid")):
            continue
        outcome = _remove_temp(Path(str(entry.get("temp", ""))))
        if outcome == "removed":
            removed.append(_shown(Path(str(entry["temp"])), root))
        elif outcome:
            left.append(f"{entry['temp']} ({outcome})")
        with contextlib.suppress(OSError):
            note.unlink()
    return _notices(removed, left)


def _read_note(note: Path) -> dict[str, object] | None:
    try:
        entry = json.loads(note.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            note.unlink()  # a note torn by the kill itself: its write had not started
        return None
    return entry if isinstance(entry, dict) else None


def _running(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return True  # this process's own write, under way
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, someone else's
    except OSError:
        return False
    return True


def _remove_temp(temp: Path) -> str:
    """"removed", "" (nothing there any more), or why the file found there was left alone."""
    try:
        info = temp.lstat()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot be checked: {exc.strerror}"
    if not (temp.name.startswith(".") and temp.name.endswith(TEMP_SUFFIX)):
        return "not an anvil temporary name"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "owned by another user"
    try:
        temp.unlink()
    except OSError as exc:
        return f"could not be removed: {exc.strerror}"
    return "removed"


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _notices(removed: list[str], left: list[str]) -> list[str]:
    notices = []
    if removed:
        listed = ", ".join(removed[:5]) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        files = "file" if len(removed) == 1 else "files"
        notices.append(f"Removed {len(removed)} partial temporary {files} an earlier anvil left when it was stopped "
                       f"while writing: {listed}. The files they were for were not changed by that write.")
    for entry in left:
        notices.append(f"An earlier anvil was stopped while writing through a temporary file at {entry}; it was "
                       "left alone. Check it and delete it if it is not yours.")
    return notices
