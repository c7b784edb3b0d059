"""The ``read_file`` and ``write_file`` tools, and the safeguards every file change goes through.

A change to an existing file needs a read of it in this session and no change on disk since (so the
model never overwrites what it has not seen), is checkpointed before it happens, keeps the file's
encoding and line endings, is written atomically, and is reported as a unified diff.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field
from rapidfuzz import fuzz, process

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.lint import run_linter
from anvil.core.tools.files.textfile import (
    BINARY_SNIFF_BYTES,
    BinaryFileError,
    TextDocument,
    UnencodableTextError,
    atomic_write,
    count_lines,
    decode_text,
    diff_stats,
    document_for_new_text,
    split_lines,
    stream_encoding,
    unified_diff,
)
from anvil.core.tools.search.ignore import ALWAYS_SKIPPED

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
#: read_file stops at a whole line past this many characters (~25k tokens) and says where to go on.
MAX_READ_CHARS = 100_000
#: Files above this size are read line by line instead of being decoded whole.
STREAM_READ_BYTES = 64 * 1024 * 1024
#: The diff in the model's output is cut past this; the full diff still goes to the front end.
DIFF_OUTPUT_CHARS = 8000
#: How many project files the "did you mean" search looks at, at most.
SUGGESTION_SCAN_LIMIT = 50_000


def phase_label(verb: str, path: str) -> str:
    shown = path.strip() or "?"
    if len(shown) > 60:
        shown = "…/" + "/".join(shown.replace("\\", "/").split("/")[-2:])
    return f"{verb} {shown}"


# --- the safeguards shared with editing.py ----------------------------------------------------------


_LOCKS_GUARD = threading.Lock()


def change_lock(ctx: ToolContext, path: Path) -> threading.Lock:
    """The lock serialising changes to ``path`` in this session: two tool calls on one file must not
    both pass the freshness check and then overwrite each other."""
    with _LOCKS_GUARD:
        locks: dict[Path, threading.Lock] = ctx.state.setdefault("file_change_locks", {})
        return locks.setdefault(path, threading.Lock())


def require_fresh_read(ctx: ToolContext, path: Path, display: str, action: str) -> None:
    """Refuse ``action`` on a file the model has not read, or that changed on disk since it did."""
    stamp = ctx.reads.get(path)
    if stamp is None:
        raise ToolError(f"{display} has not been read in this session, so it cannot be {action} yet. Read "
                        "it with read_file first (so you see its current content), then retry.")
    current = path.stat()
    if current.st_mtime_ns != stamp.mtime_ns or current.st_size != stamp.size:
        raise ToolError(f"{display} changed on disk since you last read it (size {stamp.size} → "
                        f"{current.st_size} bytes, or a newer modification time): someone else edited it. "
                        "Read it again with read_file, then redo this change against its current content.")


def check_regular_file(path: Path, display: str) -> os.stat_result:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ToolError(f"{display} does not exist.") from None
    except OSError as exc:
        raise ToolError(f"Cannot access {display}: {exc.strerror}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{display} is a directory, not a file. Use list_files to see what it contains.")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{display} is not a regular file (it is a device, socket or pipe); file tools "
                        "only work on regular files.")
    return info


def load_for_change(ctx: ToolContext, path: Path, display: str, action: str) -> tuple[bytes, TextDocument]:
    """An existing file's bytes and decoded text, once it is safe for the model to change it."""
    info = check_regular_file(path, display)
    require_fresh_read(ctx, path, display, action)
    # No write bit at all is the owner saying "do not change this", even to root, who could.
    if not os.access(path, os.W_OK) or not info.st_mode & 0o222:
        raise ToolError(f"{display} is read-only (its permissions forbid writing). Ask the person whether "
                        "it should be changed; the file tools will not override its permissions.")
    try:
        original = path.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {display}: {exc.strerror}.") from None
    try:
        return original, decode_text(original)
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


def save_change(ctx: ToolContext, path: Path, display: str, original: bytes | None, data: bytes) -> None:
    """Checkpoint, then write atomically, then remember the new state as read (a follow-up edit needs
    no re-read: the model knows what it just wrote)."""
    ctx.checkpoints.record(path, original)
    try:
        if original is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except OSError as exc:
        raise ToolError(f"Could not write {display}: {exc.strerror or exc}. The file is unchanged.") from None
    ctx.record_read(path)


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


# --- read_file --------------------------------------------------------------------------------------


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    offset: int = Field(default=1, ge=1, description="1-based line number to start reading at.")
    limit: int = Field(default=DEFAULT_READ_LIMIT, ge=1, description="How many lines to read at most.")


class ReadFileTool(Tool):
    name = "read_file"
    description = (
        "Read a text file of the project. Lines come numbered like `cat -n`: the line number, a tab, then "
        "the line; the number and tab are NOT part of the file, so never copy them into edit_file's "
        "old_string. Reads up to `limit` lines (default 2000) from `offset` (1-based); for longer files a "
        "note says which offset to read next. Lines over 2000 characters are cut. Always read a file before "
        "editing or overwriting it: edit_file, multi_edit and write_file refuse files you have not read. "
        "Binary files are refused; for a directory use list_files; to find text across files use grep."
    )
    Args = ReadFileArgs
    kind = "read"

    def phase(self, args: ReadFileArgs) -> str:
        return phase_label("Reading", args.path)

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._read, args, ctx)

    def _read(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        path = ctx.resolve(args.path)
        display = ctx.display(path)
        if not path.exists():
            raise ToolError(_missing_message(ctx, path, display))
        info = check_regular_file(path, display)
        try:
            if info.st_size > STREAM_READ_BYTES:
                lines, total, binary = _stream_lines(path, args.offset, args.limit)
            else:
                lines, total, binary = _decoded_lines(path.read_bytes(), args.offset, args.limit)
        except OSError as exc:
            raise ToolError(f"Cannot read {display}: {exc.strerror}.") from None
        if binary:
            raise ToolError(f"{display} is a binary file ({info.st_size:,} bytes); read_file only shows text. "
                            "Use run_command (for example `file` or `xxd | head`) to inspect it.")
        ctx.record_read(path)
        if total == 0:
            return ToolResult(f"{display} is empty (0 lines).", summary=f"Read {display} (empty)",
                              data={"path": display, "lines": 0})
        if not lines:
            size = f", which has {total} lines. Use an offset from 1 to {total}" if total > 0 else ""
            raise ToolError(f"offset {args.offset} is past the end of {display}{size}.")
        body, shown = _number_lines(lines, args.offset)
        last = args.offset + shown - 1
        notes = []
        if total < 0:
            notes.append(f"(Lines {args.offset}-{last} shown; the file continues. Read on with "
                         f"offset={last + 1}.)")
        elif last < total:
            notes.append(f"(Lines {args.offset}-{last} of {total} shown; {total - last} more. Read on with "
                         f"offset={last + 1}.)")
        output = body + ("\n" + "\n".join(notes) if notes else "")
        return ToolResult(output, summary=f"Read {display} (lines {args.offset}-{last})",
                          data={"path": display, "first": args.offset, "last": last, "total": total})


def _decoded_lines(data: bytes, offset: int, limit: int) -> tuple[list[str], int, bool]:
    """(the requested lines, the total line count, binary?) of a whole file's bytes."""
    try:
        text = decode_text(data).text
    except BinaryFileError:
        return [], 0, True
    total = count_lines(text)
    start = 0
    for _ in range(offset - 1):  # find the offset without splitting lines we will not show
        start = text.find("\n", start) + 1
        if start == 0:
            return [], total, False
    end = start
    for _ in range(limit):
        end = text.find("\n", end) + 1
        if end == 0:
            end = len(text)
            break
    return split_lines(text[start:end]), total, False


def _stream_lines(path: Path, offset: int, limit: int) -> tuple[list[str], int, bool]:
    # A huge file (a log, a dump) is not decoded whole: only the requested lines are read. Its total is
    # unknown (-1) unless the read reached the end. Undecodable bytes are shown as U+FFFD here.
    with open(path, "rb") as raw:
        encoding = stream_encoding(raw.read(BINARY_SNIFF_BYTES))
        if encoding is None:
            return [], 0, True
        raw.seek(0)
        reader = io.TextIOWrapper(raw, encoding=encoding, errors="replace", newline=None)
        wanted = list(itertools.islice(reader, offset - 1, offset + limit))
    lines = [line.removesuffix("\n") for line in wanted[:limit]]
    return lines, (offset - 1 + len(lines) if 0 < len(wanted) <= limit else -1), False


def _number_lines(lines: Iterable[str], first: int) -> tuple[str, int]:
    out: list[str] = []
    size = 0
    for number, line in enumerate(lines, first):
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line):,} characters in all]"
        entry = f"{number:>6}\t{line}"
        if out and size + len(entry) > MAX_READ_CHARS:
            break
        out.append(entry)
        size += len(entry) + 1
    return "\n".join(out), len(out)


def _missing_message(ctx: ToolContext, path: Path, display: str) -> str:
    suggestions = suggest_paths(ctx.root, display)
    if suggestions:
        listed = ", ".join(suggestions)
        return f"{display} does not exist. Did you mean: {listed}? (Use glob or list_files to look around.)"
    return f"{display} does not exist. Use glob or list_files to find the file you are after."


def suggest_paths(root: Path, wanted: str, limit: int = 5) -> list[str]:
    """Existing project files whose paths look most like ``wanted`` (a typo, a wrong directory)."""
    candidates: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name not in ALWAYS_SKIPPED]
        base = Path(directory).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        candidates.extend(prefix + name for name in files)
        if len(candidates) >= SUGGESTION_SCAN_LIMIT:
            break
    wanted_name = wanted.rsplit("/", 1)[-1]
    scored: dict[str, float] = {}
    # The whole path catches typos in directories; the name alone catches a file in another directory.
    for choice, score, _ in process.extract(wanted, candidates, scorer=fuzz.WRatio, limit=limit,
                                            score_cutoff=60):
        scored[choice] = score
    names = [candidate.rsplit("/", 1)[-1] for candidate in candidates]
    for _, score, index in process.extract(wanted_name, names, scorer=fuzz.ratio, limit=limit,
                                           score_cutoff=70):
        scored[candidates[index]] = max(score, scored.get(candidates[index], 0.0))
    return sorted(scored, key=lambda choice: -scored[choice])[:limit]


# --- write_file -------------------------------------------------------------------------------------


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(Tool):
    name = "write_file"
    description = (
        "Create a file, or replace a whole file's content. Parent directories are created. To overwrite an "
        "existing file you must have read it with read_file in this session, and it must not have changed "
        "since. To change part of an existing file prefer edit_file or multi_edit: they are cheaper and "
        "safer. An existing file keeps its encoding and line-ending style. Returns a diff."
    )
    Args = WriteFileArgs
    kind = "edit"
    mutates = True
    approval = "edit"

    def phase(self, args: WriteFileArgs) -> str:
        return phase_label("Writing", args.path)

    def preview(self, args: WriteFileArgs, ctx: ToolContext) -> str | None:
        try:
            path = ctx.resolve(args.path)
            display = ctx.display(path)
            before = load_for_change(ctx, path, display, "overwritten")[1].text if path.exists() else ""
        except ToolError:
            return None  # the same check fails again when the call runs, with its message for the model
        new_text = document_for_new_text(args.content).text
        return unified_diff(before, new_text, display, new_file=not path.exists())

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        result, path = await asyncio.to_thread(self._write, args, ctx)
        return await with_lint(result, path, ctx)

    def _write(self, args: WriteFileArgs, ctx: ToolContext) -> tuple[ToolResult, Path]:
        path = ctx.resolve(args.path)
        display = ctx.display(path)
        with change_lock(ctx, path):
            return self._write_locked(args, ctx, path, display), path

    def _write_locked(self, args: WriteFileArgs, ctx: ToolContext, path: Path, display: str) -> ToolResult:
        incoming = document_for_new_text(args.content)
        new_text = incoming.text
        exists = path.exists()
        if exists:
            original, document = load_for_change(ctx, path, display, "overwritten")
            before = document.text
        else:
            original, document, before = None, incoming, ""
        if exists and new_text == before:
            return ToolResult(f"{display} already has exactly this content; nothing was written.",
                              summary=f"{display} unchanged", data={"path": display}, changed=False)
        data = encode_for(document, new_text, display)
        save_change(ctx, path, display, original, data)
        diff = unified_diff(before, new_text, display, new_file=not exists)
        added, removed = diff_stats(diff)
        lines = count_lines(new_text)
        if exists:
            message = f"Wrote {display}: {lines} lines (+{added} -{removed}).\n\n{clip_diff(diff)}"
            summary = f"Updated {display} (+{added} -{removed})"
        else:
            # The model wrote this content itself: echoing it back would only cost tokens.
            message = f"Created {display}: {lines} lines, {len(data):,} bytes."
            summary = f"Created {display} ({lines} lines)"
        data_out = {"path": display, "created": not exists, "added": added, "removed": removed}
        return ToolResult(message, summary=summary, diff=diff, data=data_out, changed=True)


def file_tools() -> list[Tool]:
    """Fresh instances of read_file and write_file, for the registry."""
    return [ReadFileTool(), WriteFileTool()]
