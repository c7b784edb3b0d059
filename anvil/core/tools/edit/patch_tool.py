"""The ``apply_patch`` tool: the ``*** Begin Patch`` format of OpenAI's GPT-5 and codex models.

A patch is planned whole in memory first (:mod:`patch_parse`, then :mod:`patch_apply` for each updated file),
under the change lock of every file it names, through the safeguards every file change shares
(:mod:`anvil.core.tools.files.changes`): paths stay in the project, a protected file is not reached through a
symbolic link, a file that exists must have been read and not changed since (by its content hash) before it is
updated, deleted, or overwritten by an added or moved file, files with several hard links, binary and read-only
files are refused, and each file keeps its encoding and line endings. The tool declares every path it writes
(``write_targets``), so protected ones are asked about whatever the mode. Only when every operation has
succeeded are the files written (through a temporary file and a rename) and then deleted, each checkpointed first
(so /undo restores them); if one fails, the files already changed are put back, or the error names those that
could not be. Every file's change is part of the diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from anvil.core.tools.base import FileStamp, Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.edit.edit_tools import show_region
from anvil.core.tools.edit.patch_apply import HunkFailed, apply_hunks
from anvil.core.tools.edit.patch_parse import AddFile, DeleteFile, FileOp, PatchSyntaxError, UpdateFile, parse_patch
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.changes import (
    ChangeTarget,
    LoadedFile,
    change_lock,
    change_target,
    clip_diff,
    delete_change,
    encode_for,
    load_for_change,
    put_back,
    save_change,
    with_lint,
)
from anvil.core.tools.files.textdiff import LineChange, diff_stats, unified_diff, unified_diff_of_changes
from anvil.core.tools.files.textfile import TextDocument, document_for_new_text

_NOTHING_CHANGED = "Nothing was changed: a patch applies whole or not at all."
_HEADER_PATHS = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$", re.MULTILINE)


class ApplyPatchArgs(ToolArgs):
    input: str = Field(description="The entire patch, from '*** Begin Patch' to '*** End Patch'.")


class ApplyPatchTool(Tool):
    name = "apply_patch"
    description = (
        "Create, change, rename and delete files with one patch; it applies whole or not at all. The input is "
        "the entire patch:\n"
        "*** Begin Patch\n"
        "*** Add File: path/new.py\n"
        "+every line of the new file, each after a +\n"
        "*** Update File: path/app.py\n"
        "*** Move to: path/main.py      (optional: rename the file too)\n"
        "@@ def greet():\n"
        " a context line (a space, then the line as the file has it)\n"
        "-a line to remove\n"
        "+a line to add\n"
        "*** Delete File: path/old.py\n"
        "*** End Patch\n"
        "Each change to a file is a hunk starting with @@. Show about 3 unchanged lines above and below each "
        "change so that the hunk fits one place; when that is not enough, put the line of the enclosing class or "
        "function after @@ (several @@ lines narrow it further). Hunks follow the order of the file; a hunk that "
        "reaches the end of the file ends with '*** End of File'. Paths are relative to the project root. Read "
        "a file with read_file before you update, delete or replace it. Differences in line endings, trailing "
        "whitespace, indentation and typographic quotes are tolerated. A hunk that fits no place or several is "
        "an error naming the hunk and the closest part of the file, and then no file is changed. Returns a diff "
        "of every file."
    )
    Args = ApplyPatchArgs
    kind = "edit"
    mutates = True
    approval = "edit"

    def phase(self, args: Any) -> str:
        paths = list(dict.fromkeys(_HEADER_PATHS.findall(getattr(args, "input", ""))))
        return f"Patching {paths[0].strip()}" if len(paths) == 1 else f"Patching {len(paths)} files"

    def write_targets(self, args: ApplyPatchArgs) -> list[str]:
        """Every path the patch adds, updates, deletes or moves a file to; none for a patch that cannot be read
        (it writes nothing)."""
        try:
            return _paths(parse_patch(args.input))
        except PatchSyntaxError:
            return []

    def preview(self, args: ApplyPatchArgs, ctx: ToolContext) -> str | None:
        try:
            return _plan(ctx, _parse(args.input)).diff()
        except ToolError:
            return None  # the same failure is reported, with its message, when the call runs

    async def run(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        result, paths = await asyncio.to_thread(_apply, ctx, args.input)
        for path in paths:
            result = await with_lint(result, path, ctx)
        return result


@dataclass
class _File:
    """One file the patch touches: as it is on disk, and as the operations so far leave it."""

    target: ChangeTarget
    loaded: LoadedFile | None  # None: the file does not exist
    document: TextDocument | None  # how it is encoded (for a new file: how it will be)
    before: str | None
    text: str | None  # None: absent after the patch
    actions: list[str] = field(default_factory=list)
    moved_from: _File | None = None
    moved_away: bool = False  # the source of a move: its change shows in the destination's diff
    #: the lines its one update changed, when that is all that happened to it (a faster diff)
    changes: tuple[LineChange, ...] | None = None

    @property
    def path(self) -> Path:
        return self.target.path

    @property
    def display(self) -> str:
        return self.target.display

    def diff(self) -> str:
        if self.moved_away and self.text is None:
            return ""
        renamed = self.moved_from is not None and self.before is None
        source = self.moved_from.display if renamed and self.moved_from else self.display
        before = self.moved_from.before if renamed and self.moved_from else self.before
        if self.text is None:
            body = unified_diff(before or "", "", self.display)
            body = body.replace(f"+++ b/{_plain(self.display)}\n", "+++ /dev/null\n", 1)
        elif self.changes is not None and before is not None:
            body = unified_diff_of_changes(before, self.text, self.display, self.changes)
        else:
            body = unified_diff(before or "", self.text, self.display, new_file=before is None)
        if renamed:
            body = body.replace(f"--- a/{_plain(self.display)}\n", f"--- a/{_plain(source)}\n", 1)
            body = body or f"--- a/{_plain(source)}\n+++ b/{_plain(self.display)}\n"
        return f"diff --git a/{_plain(source)} b/{_plain(self.display)}\n{body}" if body else ""


def _plain(display: str) -> str:
    return display.lstrip("/")  # as unified_diff labels a file of an allowed directory outside the project


class _Plan:
    """The patch applied to the files in memory, in the order of its operations."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.files: dict[Path, _File] = {}

    def file(self, raw: str, action: str) -> _File:
        target = change_target(self.ctx, raw)
        if target.path in self.files:
            return self.files[target.path]
        if os.path.lexists(target.path):
            loaded = load_for_change(self.ctx, target, action)
            text = loaded.document.text
            entry = _File(target, loaded, loaded.document, text, text)
        else:
            entry = _File(target, None, None, None, None)
        self.files[target.path] = entry
        return entry

    def apply(self, op: FileOp) -> None:
        if isinstance(op, AddFile):
            entry = self.file(op.path, "overwritten")
            entry.document = entry.document or document_for_new_text(op.text)
            entry.actions.append("added" if entry.text is None else "replaced")
            entry.text, entry.changes = op.text, None
        elif isinstance(op, DeleteFile):
            entry = self.file(op.path, "deleted")
            if entry.text is None:
                raise ToolError(f"{entry.display} does not exist, so it cannot be deleted.")
            entry.text, entry.changes = None, None
            entry.actions.append("deleted")
        else:
            self._update(op)

    def _update(self, op: UpdateFile) -> None:
        entry = self.file(op.path, "edited")
        if entry.text is None:
            raise ToolError(f"{entry.display} does not exist, so there is nothing to update. To create it, use "
                            f"'*** Add File: {op.path}' with every line after a +.")
        patched = apply_hunks(entry.text, op.hunks)
        if isinstance(patched, HunkFailed):
            raise _HunkError(patched)
        steps = ", ".join(dict.fromkeys(patched.steps))
        if op.hunks:
            entry.actions.append(f"updated ({len(op.hunks)} hunk{'s' if len(op.hunks) > 1 else ''}: {steps})")
        alone = entry.text == entry.before and len(entry.actions) <= 1  # the update is all that happened to it
        target = self.file(op.move_to, "overwritten") if op.move_to else entry
        if target is not entry:
            target.document = entry.document
            target.moved_from, entry.moved_away = entry, target.before is None
            target.actions += [f"moved from {entry.display}", *entry.actions]
            entry.actions, entry.text = [], None
            alone = alone and target.before is None
        target.text = patched.text
        target.changes = patched.changes if alone else None

    def changes(self) -> list[_File]:
        return [entry for entry in self.files.values() if entry.text != entry.before or entry.moved_from is not None]

    def diff(self) -> str:
        return "".join(entry.diff() for entry in self.changes())


def _parse(text: str) -> list[FileOp]:
    try:
        return parse_patch(text)
    except PatchSyntaxError as exc:
        raise ToolError(f"The patch could not be read: {exc} {_NOTHING_CHANGED}") from None


def _paths(ops: list[FileOp]) -> list[str]:
    """The paths ``ops`` write, as the patch gives them, each once."""
    return list(dict.fromkeys(raw for op in ops for raw in (op.path, getattr(op, "move_to", None)) if raw))


def _label(op: FileOp) -> str:
    kind = "Add File" if isinstance(op, AddFile) else "Delete File" if isinstance(op, DeleteFile) else "Update File"
    return f"'*** {kind}: {op.path}' (patch line {op.line})"


def _plan(ctx: ToolContext, ops: list[FileOp]) -> _Plan:
    plan = _Plan(ctx)
    for op in ops:
        try:
            plan.apply(op)
        except ToolError as exc:
            closest = exc.failed.closest if isinstance(exc, _HunkError) else None
            region = "\n\n" + show_region(closest) if closest is not None else ""
            raise ToolError(f"{_label(op)}: {exc} {_NOTHING_CHANGED}{region}") from None
    return plan


class _HunkError(ToolError):
    def __init__(self, failed: HunkFailed) -> None:
        super().__init__(failed.message)
        self.failed = failed


def _apply(ctx: ToolContext, text: str) -> tuple[ToolResult, list[Path]]:
    ops = _parse(text)
    targets = [change_target(ctx, raw) for raw in _paths(ops)]
    with contextlib.ExitStack() as locks:
        for path in sorted({target.path for target in targets}, key=str):  # one order: no deadlock between calls
            locks.enter_context(change_lock(ctx, path))
        plan = _plan(ctx, ops)
        changes = plan.changes()
        if not changes:
            raise ToolError("The patch would not change any file: every file already reads as it would after it.")
        encoded = {entry.path: encode_for(entry.document, entry.text, entry.display)
                   for entry in changes if entry.text is not None and entry.document is not None}
        _write_all(ctx, changes, encoded)
    return _result(plan, changes), [entry.path for entry in changes if entry.text is not None]


def _write_all(ctx: ToolContext, changes: list[_File], encoded: dict[Path, bytes]) -> None:
    """Write every file (checkpointed first, so /undo restores it), then delete: a failure puts back what was
    already changed, or says exactly what could not be."""
    stamps = {entry.path: ctx.reads.get(entry.path) for entry in changes}
    done: list[_File] = []
    for entry in sorted(changes, key=lambda entry: entry.text is None):  # deletions last
        try:
            if entry.text is None:
                if entry.loaded is not None:
                    delete_change(ctx, entry.target, entry.loaded)
            else:
                save_change(ctx, entry.target, entry.loaded, encoded[entry.path])
        except ToolError as exc:
            raise ToolError(f"{exc} {_undo_partial(ctx, done, stamps)}") from None
        done.append(entry)


def _undo_partial(ctx: ToolContext, done: list[_File], stamps: dict[Path, FileStamp | None]) -> str:
    """Put back the files a failed patch already changed; what to tell the model about them."""
    if not done:
        return _NOTHING_CHANGED
    stuck: list[str] = []
    for entry in reversed(done):
        try:
            put_back(ctx, entry.target, entry.loaded.original if entry.loaded else None, ctx.reads.get(entry.path))
        except (OSError, ToolError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            stuck.append(f"{entry.display} ({_action(entry)}; not put back: {reason})")
            continue
        ctx.reads.pop(entry.path, None)
        stamp = stamps[entry.path]
        if stamp is not None:
            ctx.reads[entry.path] = stamp  # as the model read it: the same bytes again
    if not stuck:
        shown = ", ".join(entry.display for entry in done)
        return f"The files already changed ({shown}) were put back. {_NOTHING_CHANGED}"
    return (f"Part of the patch stays applied: {'; '.join(stuck)}. Every other file is as it was. Read those "
            "files again before changing them; /undo restores them.")


def _result(plan: _Plan, changes: list[_File]) -> ToolResult:
    diff = plan.diff()
    added, removed = diff_stats(diff)
    shown = [entry for entry in changes if entry.actions]
    described = "; ".join(f"{entry.display} {', '.join(entry.actions)}" for entry in shown)
    count = f"{len(shown)} file{'s' if len(shown) != 1 else ''}"
    headline = f"Applied the patch to {count}: {described}."
    if "fuzzy" in described:
        headline += " A fuzzy match replaced text that differs from the hunk: check the diff is what you meant."
    files = [{"path": entry.display, "action": _action(entry)} for entry in shown]
    return ToolResult(f"{headline}\n\n{clip_diff(diff)}", summary=f"Patched {count} (+{added} -{removed})", diff=diff,
                      data={"files": files, "added": added, "removed": removed, "changed": True})


def _action(entry: _File) -> str:
    if entry.text is None:
        return "deleted"
    if entry.moved_from is not None:
        return "moved"
    return "added" if entry.before is None else "updated"


def patch_tools() -> list[Tool]:
    """A fresh apply_patch, for the registry."""
    return [ApplyPatchTool()]
