"""The ``read_file`` and ``write_file`` tools.

A change to an existing file needs a read of it in this session and no change on disk since (so the
model never overwrites what it has not seen), is checkpointed before it happens, keeps the file's
encoding and line endings, is written atomically, and is reported as a unified diff: the safeguards
every file change shares are in :mod:`anvil.core.tools.files.changes`.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pydantic import Field
from rapidfuzz import fuzz, process

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.changes import (
    ChangeTarget,
    base_dirs,
    change_lock,
    change_target,
    clip_diff,
    digest,
    encode_for,
    load_for_change,
    save_change,
    with_lint,
)
from anvil.core.tools.files.safe_io import located, open_regular
from anvil.core.tools.files.textdiff import diff_stats, unified_diff
from anvil.core.tools.files.textfile import (
    BINARY_SNIFF_BYTES,
    BinaryFileError,
    count_lines,
    decode_text,
    document_for_new_text,
    split_lines,
    stream_encoding,
)
from anvil.core.tools.search.ignore import ALWAYS_SKIPPED

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
#: read_file stops at a whole line past this many characters (~25k tokens) and says where to go on.
MAX_READ_CHARS = 100_000
#: Files above this size are read line by line instead of being decoded whole.
STREAM_READ_BYTES = 64 * 1024 * 1024
#: How many project files the "did you mean" search looks at, at most.
SUGGESTION_SCAN_LIMIT = 50_000
UNSAVED_NOTE = ("(Shown from the editor, where {display} has unsaved changes: the file on disk differs. Edits change "
                "the file on disk; if yours depend on the unsaved text, ask the person to save first.)")


def phase_label(verb: str, path: str) -> str:
    shown = path.strip() or "?"
    if len(shown) > 60:
        shown = "…/" + "/".join(shown.replace("\\", "/").split("/")[-2:])
    return f"{verb} {shown}"


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
        "editing or overwriting it: the edit tools and write_file refuse files you have not read. "
        "Binary files are refused; for a directory use list_files; to find text across files use grep."
    )
    Args = ReadFileArgs
    kind = "read"
    planning = True

    def phase(self, args: ReadFileArgs) -> str:
        return phase_label("Reading", args.path)

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        path, display, page = await asyncio.to_thread(self._read, args, ctx)
        note = None
        if ctx.editor_text is not None:  # the path passed every check above; the editor may hold newer text
            buffer = await ctx.editor_text(path)
            unsaved = _decoded_page(io.BytesIO(buffer.encode("utf-8")), args.offset, args.limit) if buffer else None
            if unsaved is not None and _differs(unsaved, page):
                page, note = unsaved, UNSAVED_NOTE.format(display=display)
        return _shown(page, args, display, note)

    def _read(self, args: ReadFileArgs, ctx: ToolContext) -> tuple[Path, str, _Page]:
        path = ctx.resolve(args.path)
        display = ctx.display(path)
        try:
            with located(path, base_dirs(ctx), display) as location:
                fd, info = open_regular(location, display)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(_missing_message(ctx, path, display)) from None
        except OSError as exc:
            raise ToolError(f"Cannot read {display}: {exc.strerror}.") from None
        try:
            with os.fdopen(fd, "rb") as handle:
                page = (_streamed_page if info.st_size > STREAM_READ_BYTES else _decoded_page)(
                    handle, args.offset, args.limit)
        except OSError as exc:
            raise ToolError(f"Cannot read {display}: {exc.strerror}.") from None
        if page.binary:
            raise ToolError(f"{display} is a binary file ({info.st_size:,} bytes); read_file only shows text. "
                            "Use run_command (for example `file` or `xxd | head`) to inspect it.")
        ctx.record_read(path, info, page.digest)  # what is on disk: a later write checks against it
        return path, display, page


def _shown(page: _Page, args: ReadFileArgs, display: str, note: str | None) -> ToolResult:
    """What the model reads of a page: numbered lines and the notes that say what is missing or odd."""
    total = page.total
    if total == 0:
        return ToolResult(f"{display} is empty (0 lines).", summary=f"Read {display} (empty)",
                          data={"path": display, "lines": 0})
    if not page.lines:
        size = f", which has {total} lines. Use an offset from 1 to {total}" if total > 0 else ""
        raise ToolError(f"offset {args.offset} is past the end of {display}{size}.")
    body, shown = _number_lines(page.lines, args.offset)
    last = args.offset + shown - 1
    notes = [note] if note else []
    if page.stray[0]:
        notes.append(_stray_note(display, *page.stray))
    if total < 0:
        notes.append(f"(Lines {args.offset}-{last} shown; the file continues. Read on with offset={last + 1}.)")
    elif last < total:
        notes.append(f"(Lines {args.offset}-{last} of {total} shown; {total - last} more. Read on with "
                     f"offset={last + 1}.)")
    output = body + ("\n" + "\n".join(notes) if notes else "")
    data: dict[str, object] = {"path": display, "first": args.offset, "last": last, "total": total}
    if page.stray[0]:
        data["invalid_bytes"] = {"count": page.stray[0], "lines": page.stray[1]}
    if note:
        data["unsaved"] = True
    return ToolResult(output, summary=f"Read {display} (lines {args.offset}-{last})", data=data)


def _differs(unsaved: _Page, disk: _Page) -> bool:
    """Whether the editor's text shows something other than the file on disk (line endings aside: editors
    keep their own)."""
    def same(lines: list[str]) -> list[str]:
        return [line.rstrip("\r") for line in lines]

    return unsaved.total != disk.total or same(unsaved.lines) != same(disk.lines)


@dataclass
class _Page:
    """What one read_file call shows, and what it knows about the whole file."""

    lines: list[str] = field(default_factory=list)
    #: the file's line count; -1 when a streamed read did not reach the end
    total: int = 0
    binary: bool = False
    #: sha256 of the whole file, for the check before a later change
    digest: str = ""
    #: bytes that are not valid UTF-8 in a UTF-8 file: how many, and on which lines
    stray: tuple[int, list[int]] = (0, [])


def _decoded_page(handle: BinaryIO, offset: int, limit: int) -> _Page:
    """The requested lines of a file read and decoded whole."""
    data = handle.read()
    try:
        document = decode_text(data)
    except BinaryFileError:
        return _Page(binary=True)
    text = document.text
    page = _Page(total=count_lines(text), digest=digest(data), stray=document.stray_bytes())
    start = 0
    for _ in range(offset - 1):  # find the offset without splitting lines we will not show
        start = text.find("\n", start) + 1
        if start == 0:
            return page
    end = start
    for _ in range(limit):
        end = text.find("\n", end) + 1
        if end == 0:
            end = len(text)
            break
    page.lines = split_lines(text[start:end])
    return page


def _streamed_page(handle: BinaryIO, offset: int, limit: int) -> _Page:
    # A huge file (a log, a dump) is not decoded whole: only the requested lines are read. Its total is
    # unknown (-1) unless the read reached the end. Undecodable bytes are shown as U+FFFD here.
    encoding = stream_encoding(handle.read(BINARY_SNIFF_BYTES))
    if encoding is None:
        return _Page(binary=True)
    handle.seek(0)
    whole = hashlib.file_digest(handle, "sha256").hexdigest()
    handle.seek(0)
    reader = io.TextIOWrapper(handle, encoding=encoding, errors="replace", newline=None)
    wanted = list(itertools.islice(reader, offset - 1, offset + limit))
    reader.detach()  # the handle is closed by its owner
    lines = [line.removesuffix("\n") for line in wanted[:limit]]
    return _Page(lines, offset - 1 + len(lines) if 0 < len(wanted) <= limit else -1, digest=whole)


def _stray_note(display: str, count: int, lines: list[int]) -> str:
    where = ", ".join(str(line) for line in lines[:10]) + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")
    many = count > 1
    return (f"(Note: {display} is UTF-8 except for {count} byte{'s' if many else ''} that {'are' if many else 'is'} "
            f"not valid UTF-8, on line{'s' if len(lines) > 1 else ''} {where}, shown as \ufffd. Edits keep "
            f"{'them' if many else 'it'} as {'they are' if many else 'it is'}; text you write is stored as UTF-8.)")


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
        "since. To change part of an existing file prefer the edit tools (edit_file and multi_edit, or "
        "apply_patch): they are cheaper and safer. An existing file keeps its encoding and line-ending style. "
        "Returns a diff."
    )
    Args = WriteFileArgs
    kind = "edit"
    mutates = True
    approval = "edit"
    planning = True

    def phase(self, args: WriteFileArgs) -> str:
        return phase_label("Writing", args.path)

    def write_targets(self, args: WriteFileArgs) -> list[str]:
        return [args.path]

    def preview(self, args: WriteFileArgs, ctx: ToolContext) -> str | None:
        try:
            target = change_target(ctx, args.path)
            exists = os.path.lexists(target.path)
            before = load_for_change(ctx, target, "overwritten").document.text if exists else ""
        except ToolError:
            return None  # the same check fails again when the call runs, with its message for the model
        new_text = document_for_new_text(args.content).text
        return unified_diff(before, new_text, target.display, new_file=not exists)

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        result, path = await asyncio.to_thread(self._write, args, ctx)
        return await with_lint(result, path, ctx)

    def _write(self, args: WriteFileArgs, ctx: ToolContext) -> tuple[ToolResult, Path]:
        target = change_target(ctx, args.path)
        with change_lock(ctx, target.path):
            return self._write_locked(args, ctx, target), target.path

    def _write_locked(self, args: WriteFileArgs, ctx: ToolContext, target: ChangeTarget) -> ToolResult:
        incoming = document_for_new_text(args.content)
        new_text = incoming.text
        display = target.display
        exists = os.path.lexists(target.path)
        loaded = load_for_change(ctx, target, "overwritten") if exists else None
        document, before = (loaded.document, loaded.document.text) if loaded is not None else (incoming, "")
        if exists and new_text == before:
            return ToolResult(f"{display} already has exactly this content; nothing was written.",
                              summary=f"{display} unchanged", data={"path": display}, changed=False)
        data = encode_for(document, new_text, display)
        save_change(ctx, target, loaded, data)
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
