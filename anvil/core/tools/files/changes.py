"""The safeguards every file change goes through, whichever tool makes it (write_file, edit_file, multi_edit...).

A tool that writes a file names its paths (``Tool.write_targets``), so the approval policy sees them, and
goes through here to write: :func:`change_target` (inside the project, not a protected file reached through a
symbolic link), :func:`load_for_change` (an existing file: read in this session and unchanged since, judged by
its content hash, not a hard link, writable), then :func:`save_change` (checkpoint, then a write through a
temporary file and a rename, relative to a directory descriptor so no symbolic link swapped in meanwhile can
redirect it; the file changing meanwhile stops it).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from anvil.core.tools.base import ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.leftovers import pending_write
from anvil.core.tools.files.lint import run_linter
from anvil.core.tools.files.safe_io import located, open_regular, read_all, replace_file, temp_name
from anvil.core.tools.files.textfile import BinaryFileError, TextDocument, UnencodableTextError, decode_text
from anvil.core.tools.protected import check_link_target

#: The diff in the model's output is cut past this; the full diff still goes to the front end.
DIFF_OUTPUT_CHARS = 8000

_LOCKS_GUARD = threading.Lock()


@dataclass(frozen=True)
class ChangeTarget:
    """A path the model asked to write, once checked: ``path`` is resolved and is what gets written."""

    raw: str
    path: Path
    display: str


@dataclass(frozen=True)
class LoadedFile:
    """An existing file as read for a change: its bytes, its decoded text and its status at that moment."""

    original: bytes
    document: TextDocument
    info: os.stat_result


def change_target(ctx: ToolContext, raw: str) -> ChangeTarget:
    """The model's path, inside the project, refused when it reaches a protected file through a symbolic link."""
    path = ctx.resolve(raw)
    check_link_target(ctx, raw, path)
    return ChangeTarget(raw, path, ctx.display(path))


def base_dirs(ctx: ToolContext) -> list[Path]:
    """The directories file paths are walked from: the project and the allowed directories."""
    return [ctx.root, *ctx.settings.allowed_dirs]


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def change_lock(ctx: ToolContext, path: Path) -> threading.Lock:
    """The lock serialising changes to ``path`` in this session: two tool calls on one file must not
    both pass the freshness check and then overwrite each other."""
    with _LOCKS_GUARD:
        locks: dict[Path, threading.Lock] = ctx.state.setdefault("file_change_locks", {})
        return locks.setdefault(path, threading.Lock())


def require_fresh_read(ctx: ToolContext, target: ChangeTarget, info: os.stat_result, data: bytes,
                       action: str) -> None:
    """Refuse ``action`` on a file the model has not read, or whose content changed since it did."""
    stamp = ctx.reads.get(target.path)
    display = target.display
    if stamp is None:
        raise ToolError(f"{display} has not been read in this session, so it cannot be {action} yet. Read "
                        "it with read_file first (so you see its current content), then retry.")
    if digest(data) == stamp.digest:
        return  # touched, or rewritten with the same bytes: nothing the model has not seen
    if info.st_size != stamp.size:
        detail = f"size {stamp.size} → {info.st_size} bytes"
    elif stamp.same_metadata(info):
        detail = "same size and modification time, but different content: its time was set back"
    else:
        detail = "same size, different content"
    raise ToolError(f"{display} changed on disk since you last read it ({detail}): someone else edited it. "
                    "Read it again with read_file, then redo this change against its current content.")


def load_for_change(ctx: ToolContext, target: ChangeTarget, action: str) -> LoadedFile:
    """An existing file's bytes and decoded text, once it is safe for the model to change it."""
    display = target.display
    try:
        with located(target.path, base_dirs(ctx), display) as location:
            fd, info = open_regular(location, display)
    except FileNotFoundError:
        raise ToolError(f"{display} does not exist.") from None
    except OSError as exc:
        raise ToolError(f"Cannot access {display}: {exc.strerror}.") from None
    try:
        original = read_all(fd, info.st_size)
    except OSError as exc:
        raise ToolError(f"Cannot read {display}: {exc.strerror}.") from None
    finally:
        os.close(fd)
    require_fresh_read(ctx, target, info, original, action)
    # No write bit at all is the owner saying "do not change this", even to root, who could.
    if not os.access(target.path, os.W_OK) or not info.st_mode & 0o222:
        raise ToolError(f"{display} is read-only (its permissions forbid writing). Ask the person whether "
                        "it should be changed; the file tools will not override its permissions.")
    try:
        return LoadedFile(original, decode_text(original), info)
    except BinaryFileError:
        raise ToolError(f"{display} is a binary file; the file tools only change text files.") from None


def encode_for(document: TextDocument, new_text: str, display: str) -> bytes:
    try:
        return document.encode(new_text)
    except UnencodableTextError as exc:
        raise ToolError(f"{display} is stored as {exc.encoding}, which cannot hold {exc.char!r} "
                        f"(U+{ord(exc.char):04X}, line {exc.line} of the new content). Use characters "
                        f"{exc.encoding} can store (or an escape sequence), or ask the person to convert the "
                        "file to UTF-8. The file is unchanged.") from None


def save_change(ctx: ToolContext, target: ChangeTarget, loaded: LoadedFile | None, data: bytes) -> None:
    """Checkpoint, then write through a temporary file and a rename, then remember the new state as read (a
    follow-up edit needs no re-read: the model knows what it just wrote). ``loaded`` None creates the file."""
    ctx.checkpoints.record(target.path, loaded.original if loaded is not None else None)
    display = target.display
    try:
        with located(target.path, base_dirs(ctx), display, create_dirs=loaded is None) as location:
            temp = temp_name(location.name)
            with pending_write(ctx.data_dir, ctx.root, target.path.parent / temp):
                info = replace_file(location, data, loaded.info if loaded is not None else None, display, temp)
    except OSError as exc:
        raise ToolError(f"Could not write {display}: {exc.strerror or exc}. The file is unchanged.") from None
    ctx.record_read(target.path, info, digest(data))


def clip_diff(diff: str) -> str:
    """The diff as the model sees it: whole when short, else its start and a count of what was cut."""
    if len(diff) <= DIFF_OUTPUT_CHARS:
        return diff
    cut = diff.rfind("\n", 0, DIFF_OUTPUT_CHARS) + 1
    hidden = diff.count("\n", cut)
    return f"{diff[:cut]}… diff cut here: {hidden} more lines. Read the file to check the rest.\n"


async def with_lint(result: ToolResult, path: Path, ctx: ToolContext) -> ToolResult:
    report = await run_linter(path, ctx)
    if report:
        result.output = f"{result.output.rstrip()}\n\n{report}"
        result.data = {**(result.data or {}), "lint": report}
    return result
