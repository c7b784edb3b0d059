"""The ``edit_file`` and ``multi_edit`` tools: targeted replacements in an existing file.

The matching itself is pure (:mod:`anvil.core.tools.edit.match`); this module adds what touches the
disk, through the safeguards every file change shares (:mod:`anvil.core.tools.files.changes`): the
read-before-edit rule, encoding and line endings, the checkpoint, the atomic write; then the diff and the linter.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import Field

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.edit.match import (
    STEP_DESCRIPTIONS,
    Edit,
    EditApplied,
    EditFailed,
    MultiEditApplied,
    MultiEditFailed,
    apply_edits,
)
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.changes import (
    ChangeTarget,
    LoadedFile,
    change_lock,
    change_target,
    clip_diff,
    encode_for,
    load_for_change,
    save_change,
    with_lint,
)
from anvil.core.tools.files.file_tools import phase_label
from anvil.core.tools.files.textdiff import diff_stats, unified_diff

#: A failed edit shows at most this many lines of the closest region.
CLOSEST_REGION_LINES = 40


class EditFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    old_string: str = Field(description="The exact text to replace, copied from read_file output without the "
                                        "line-number prefixes. Include enough lines to match one place only.")
    new_string: str = Field(description="The text to put in its place (must differ from old_string).")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


class EditSpec(ToolArgs):
    old_string: str = Field(description="The exact text to replace, as the file reads after the edits before.")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


class MultiEditArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    edits: list[EditSpec] = Field(min_length=1, description="Edits applied in order, each to the result of "
                                                           "the previous ones. All succeed or none is applied.")


class EditFileTool(Tool):
    name = "edit_file"
    description = (
        "Replace text in an existing file. old_string must match exactly one place: copy it from read_file "
        "output without the line-number prefix, with enough surrounding lines to be unique, or set "
        "replace_all to change every occurrence. You must have read the file in this session. Small "
        "differences in line endings, trailing whitespace, indentation (new_string is then re-indented to "
        "the file's) and typographic quotes or dashes are tolerated, and a block of 3+ lines may match "
        "fuzzily; the result names the step that matched and shows a diff. On failure it shows the most "
        "similar region with line numbers so you can retry. For several changes to one file use multi_edit; "
        "to create a file use write_file."
    )
    Args = EditFileArgs
    kind = "edit"
    mutates = True
    approval = "edit"

    def phase(self, args: Any) -> str:
        return phase_label("Editing", args.path)

    def write_targets(self, args: Any) -> list[str]:
        return [args.path]

    def preview(self, args: EditFileArgs, ctx: ToolContext) -> str | None:
        return preview_edit(ctx, args.path, [Edit(args.old_string, args.new_string, args.replace_all)])

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        edit = Edit(args.old_string, args.new_string, args.replace_all)
        result, path = await asyncio.to_thread(_edit_file, ctx, args.path, [edit], False)
        return await with_lint(result, path, ctx)


class MultiEditTool(Tool):
    name = "multi_edit"
    description = (
        "Make several replacements in one file in one step: edits are applied in order, each to the result "
        "of the previous ones, and either all succeed or none is applied (the file stays untouched and the "
        "error names the edit that failed). Each edit works like edit_file (old_string, new_string, "
        "replace_all). Read the file first. Prefer it to several edit_file calls on the same file."
    )
    Args = MultiEditArgs
    kind = "edit"
    mutates = True
    approval = "edit"

    def phase(self, args: Any) -> str:
        return phase_label("Editing", args.path)

    def write_targets(self, args: Any) -> list[str]:
        return [args.path]

    def preview(self, args: MultiEditArgs, ctx: ToolContext) -> str | None:
        return preview_edit(ctx, args.path, [Edit(e.old_string, e.new_string, e.replace_all) for e in args.edits])

    async def run(self, args: MultiEditArgs, ctx: ToolContext) -> ToolResult:
        edits = [Edit(spec.old_string, spec.new_string, spec.replace_all) for spec in args.edits]
        result, path = await asyncio.to_thread(_edit_file, ctx, args.path, edits, True)
        return await with_lint(result, path, ctx)


def _planned_edit(ctx: ToolContext, target: ChangeTarget, edits: list[Edit], multi: bool
                  ) -> tuple[LoadedFile, MultiEditApplied]:
    """Everything up to the write: check the read, apply the edits to the text in memory."""
    if not os.path.lexists(target.path):
        raise ToolError(f"{target.display} does not exist, so there is nothing to edit. To create it, use "
                        "write_file with its full content.")
    loaded = load_for_change(ctx, target, "edited")
    outcome = apply_edits(loaded.document.text, edits)
    if isinstance(outcome, MultiEditFailed):
        raise ToolError(_failure_message(target.display, outcome, len(edits), multi))
    return loaded, outcome


def preview_edit(ctx: ToolContext, raw_path: str, edits: list[Edit]) -> str | None:
    """The diff the edits would make, or None when they would fail (the failure is reported when run)."""
    try:
        target = change_target(ctx, raw_path)
        loaded, outcome = _planned_edit(ctx, target, edits, True)
    except ToolError:
        return None
    return unified_diff(loaded.document.text, outcome.text, target.display)


def _edit_file(ctx: ToolContext, raw_path: str, edits: list[Edit], multi: bool) -> tuple[ToolResult, Path]:
    target = change_target(ctx, raw_path)
    display = target.display
    with change_lock(ctx, target.path):
        loaded, outcome = _planned_edit(ctx, target, edits, multi)
        save_change(ctx, target, loaded, encode_for(loaded.document, outcome.text, display))
    diff = unified_diff(loaded.document.text, outcome.text, display)
    added, removed = diff_stats(diff)
    if multi:
        described = "; ".join(f"edits[{i}]: {_describe(r)}" for i, r in enumerate(outcome.results))
        headline = f"Applied {len(edits)} edits to {display} ({described})."
    else:
        headline = f"Edited {display}: {_describe(outcome.results[0])}."
    if any(applied.step == "fuzzy" for applied in outcome.results):
        headline += " A fuzzy match replaced text that differs from old_string: check the diff is what you meant."
    result = ToolResult(
        f"{headline}\n\n{clip_diff(diff)}", summary=f"Edited {display} (+{added} -{removed})", diff=diff,
        data={"path": display, "steps": [r.step for r in outcome.results], "added": added, "removed": removed,
              "lines": [[str(r) for r in applied.ranges] for applied in outcome.results]})
    return result, target.path


def _describe(result: EditApplied) -> str:
    where = ", ".join(str(r) for r in result.ranges[:10]) + (" …" if result.count > 10 else "")
    count = "1 replacement" if result.count == 1 else f"{result.count} replacements"
    line_word = "line" if result.count == 1 and result.ranges[0].first == result.ranges[0].last else "lines"
    how = STEP_DESCRIPTIONS[result.step]
    if result.step == "fuzzy":
        how += f" (similarity {result.similarity:.2f})"
    return f"{count} at {line_word} {where}, {how}"


def _failure_message(display: str, failed: MultiEditFailed, total: int, multi: bool) -> str:
    failure: EditFailed = failed.failure
    if multi:
        text = (f"multi_edit on {display} failed at edits[{failed.index}] (edit {failed.index + 1} of {total}): "
                f"{failure.message}")
        if failed.index > 0:
            earlier = "edits[0]" if failed.index == 1 else f"edits[0]..edits[{failed.index - 1}]"
            text += f" Line numbers refer to the file as {earlier} would leave it."
        text += " No edit was applied; the file is unchanged. Fix that edit and send all the edits again."
    else:
        text = f"Could not edit {display}: {failure.message} The file is unchanged."
    region = failure.closest
    if region is not None:
        lines = region.text.split("\n")
        shown = [f"{number:>6}\t{line}" for number, line in enumerate(lines[:CLOSEST_REGION_LINES],
                                                                          region.lines.first)]
        if len(lines) > CLOSEST_REGION_LINES:
            shown.append(f"… {len(lines) - CLOSEST_REGION_LINES} more lines")
        text += (f"\n\nClosest region, {region.lines.label()} (similarity {region.similarity:.2f}):\n"
                 + "\n".join(shown))
    return text


def edit_tools() -> list[Tool]:
    """Fresh instances of edit_file and multi_edit, for the registry."""
    return [EditFileTool(), MultiEditTool()]
