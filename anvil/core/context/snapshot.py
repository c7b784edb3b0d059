"""The text of compaction: tool-result stubs, the transcript a summary is written from, and the snapshot.

A snapshot is the user-role message that stands for the compacted part of the conversation. anvil
writes the parts that must not be paraphrased itself, from the history rather than from the model:
every message the person typed (verbatim), the files changed (from the tool calls) and the todo list.
The model contributes only the narrative (goal, decisions, open errors, next step). A later compaction
reads those parts back out of the earlier snapshot, so they survive any number of compactions and a
resumed session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

SNAPSHOT_MARK = "[anvil context snapshot]"
ENGINE_MARK = "[anvil]"  # user-role messages the engine writes (verification results): not the person's words
STUB_MARK = "[anvil: old tool result removed"
#: The paths a tool call writes, from its tool's name and its JSON arguments (empty for a call that writes none).
WrittenPaths = Callable[[str, str], list[str]]
_KEY_ARGS = ("path", "pattern", "command", "glob", "id", "offset", "limit")
# The tag closing a person's message is chosen so that no message contains it (see render_snapshot).
_USER_BLOCK = re.compile(r'<(user_message(?:_\d+)?) n="\d+">\n(.*?)\n</\1>', re.DOTALL)
_FILES_SECTION = re.compile(r"## Files created or modified \(from the tool calls\)\n(.*?)(?:\n## |\Z)", re.DOTALL)
_PERSON_HEADING = "## Messages from the person, word for word, oldest first\n"


def content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multi-part content: keep the text parts
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def is_snapshot(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and content_text(message).startswith(SNAPSHOT_MARK)


def is_person_message(message: dict[str, Any]) -> bool:
    if message.get("role") != "user":
        return False
    return not content_text(message).startswith((SNAPSHOT_MARK, ENGINE_MARK))


def is_stub(message: dict[str, Any]) -> bool:
    return message.get("role") == "tool" and content_text(message).startswith(STUB_MARK)


# -- tier 1: stubs --------------------------------------------------------------------------------


def tool_calls_by_id(messages: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            calls[str(call.get("id"))] = (str(function.get("name", "")), str(function.get("arguments", "")))
    return calls


def key_arguments(arguments: str, limit: int = 160) -> str:
    """The arguments that identify a call (path, pattern, command...), short enough for a one-line stub."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = None
    if not isinstance(args, dict):
        return arguments[:limit]
    keys = [k for k in _KEY_ARGS if k in args] or list(args)[:2]
    parts = []
    for key in keys:
        value = json.dumps(args[key], ensure_ascii=False)
        parts.append(f"{key}={value if len(value) <= 80 else value[:77] + '...'}")
    return ", ".join(parts)[:limit]


def tool_stub(name: str, arguments: str, original: str, tokens: int) -> str:
    return (f"{STUB_MARK} to save context] {name}({key_arguments(arguments)}) returned {len(original):,} "
            f"characters (~{tokens:,} tokens). Call the tool again to see it.")


def cut_middle(text: str, max_chars: int, what: str) -> str:
    """Head and tail of ``text`` within ``max_chars``, saying what was cut and why."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars - 120, 40)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3):]
    return (f"{head}\n[... {len(text) - len(head) - len(tail):,} characters of {what} cut to fit the context; "
            f"ask again with a narrower range to see them ...]\n{tail}")


# -- tier 2: the transcript the summary is written from -------------------------------------------


def transcript_blocks(messages: list[dict[str, Any]], result_chars: int = 2000) -> list[str]:
    """One plain-text block per message: roles and tool calls spelled out, long tool results cut."""
    blocks = []
    for message in messages:
        role = message.get("role")
        text = content_text(message)
        if role == "user":
            who = "SNAPSHOT OF EARLIER CONTEXT" if is_snapshot(message) else (
                "ANVIL (automatic message)" if not is_person_message(message) else "PERSON")
            blocks.append(f"{who}:\n{text}")
        elif role == "assistant":
            lines = [f"ASSISTANT:\n{text}"] if text else []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                arguments = cut_middle(str(function.get("arguments")), 600, "arguments")
                lines.append(f"ASSISTANT CALLS {function.get('name')}({arguments})")
            blocks.append("\n".join(lines) or "ASSISTANT: (no text)")
        elif role == "tool":
            blocks.append(f"RESULT of {message.get('name', 'tool')}:\n{cut_middle(text, result_chars, 'output')}")
    return blocks


SUMMARY_SYSTEM = (
    "You write state snapshots of coding sessions so that work can continue after older messages are "
    "dropped from the context. Be factual and specific: file paths, function names, commands, error "
    "messages. Never invent progress. Do not call tools."
)

SNAPSHOT_FORMAT = """Write the snapshot in exactly these sections (markdown headings), and nothing else:

## Goal
What the person wants overall, in one or two sentences.
## Decisions
Choices made and constraints agreed (libraries, approaches, things the person ruled out).
## Work done
What was changed or learnt, file by file where it matters.
## Errors still open
Failures not yet resolved, with the exact error text; "none" if there are none.
## Next step
The very next thing to do.

The person's messages, the list of changed files and the todo list are kept separately, word for word:
do not copy them out."""


def summary_request(transcript: str, *, focus: str | None, todos: str, part: tuple[int, int] | None = None,
                    partials: bool = False) -> list[dict[str, Any]]:
    """The no-tools request for a snapshot (or for one part of a long history, or to merge parts)."""
    if partials:
        lead = "Below are snapshots of consecutive parts of one coding session, oldest first. Merge them."
    elif part is not None:
        lead = (f"Below is part {part[0]} of {part[1]} of a coding session (oldest first). Summarise this part "
                "only; the parts will be merged later.")
    else:
        lead = "Below is the older part of a coding session, oldest first. Summarise it."
    focus_line = f"\nThe person asked the snapshot to focus on: {focus}\n" if focus else ""
    text = (f"{lead}\n\n<transcript>\n{transcript}\n</transcript>\n\nCurrent todo list:\n{todos}\n"
            f"{focus_line}\n{SNAPSHOT_FORMAT}")
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": text}]


# -- the snapshot ---------------------------------------------------------------------------------


def person_messages(messages: list[dict[str, Any]]) -> list[str]:
    """Everything the person typed in ``messages``, oldest first, including what earlier snapshots kept."""
    found: list[str] = []
    for message in messages:
        if is_snapshot(message):
            found.extend(_snapshot_person_messages(content_text(message)))
        elif is_person_message(message):
            found.append(content_text(message))
    return found


def _snapshot_person_messages(text: str) -> list[str]:
    # Read the blocks one after another from the section heading, so a summary that quotes a block
    # (against instructions) cannot add a message the person never sent.
    start = text.find(_PERSON_HEADING)
    if start < 0:
        return []
    position, found = start + len(_PERSON_HEADING), []
    while (block := _USER_BLOCK.match(text, position)) is not None:
        found.append(block.group(2))
        position = block.end() + 1  # the newline between blocks
    return found


def changed_files(messages: list[dict[str, Any]], written: WrittenPaths) -> list[str]:
    """Files the model wrote or edited in ``messages`` (and those earlier snapshots listed), in order.
    ``written``: the paths a call writes, from its tool's name and JSON arguments (each tool declares them)."""
    files: dict[str, None] = {}
    for message in messages:
        if is_snapshot(message):
            section = _FILES_SECTION.search(content_text(message))
            for line in (section.group(1) if section else "").splitlines():
                if line.startswith("- "):
                    files[line[2:].strip()] = None
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name, arguments = function.get("name"), function.get("arguments")
            if isinstance(name, str):
                files.update(dict.fromkeys(path for path in written(name, arguments or "") if path))
    return list(files)


def fit_person_messages(texts: list[str], max_chars: int) -> tuple[list[str], bool]:
    """Cut the longest messages in the middle until all fit ``max_chars``; say whether any was cut.

    Only a person who pasted very large texts meets this: the words are kept, the bulk of a paste is not.
    """
    texts = list(texts)
    cut = False
    while sum(map(len, texts)) > max_chars and texts:
        longest = max(range(len(texts)), key=lambda i: len(texts[i]))
        target = max(len(texts[longest]) // 2, 400)
        if target >= len(texts[longest]):
            break
        texts[longest] = cut_middle(texts[longest], target, "this message")
        cut = True
    return texts, cut


def render_snapshot(*, person: list[str], summary: str | None, files: list[str], todos: str,
                    note: str = "") -> str:
    # Word for word means no escaping: pick a tag name that none of the messages contains instead.
    tag, variant = "user_message", 1
    while any(f"</{tag}>" in text for text in person):
        variant += 1
        tag = f"user_message_{variant}"
    numbered = "\n".join(f'<{tag} n="{n}">\n{text}\n</{tag}>' for n, text in enumerate(person, 1))
    narrative = summary.strip() if summary else (
        "(No summary: the summary request failed. The person's messages, changed files and todos below are "
        "complete; re-read files and re-run commands to recover details.)")
    file_lines = "\n".join(f"- {path}" for path in files) or "(none)"
    parts = [
        f"{SNAPSHOT_MARK} Older messages of this conversation were compacted to save context; this snapshot "
        "replaces them and the most recent messages follow it unchanged. Tool results that are gone can be "
        "fetched again by calling the tool.",
        f"{_PERSON_HEADING}{numbered or '(none)'}",
        f"## State of the work (summary)\n{narrative}",
        f"## Files created or modified (from the tool calls)\n{file_lines}",
        f"## Todo list\n{todos}",
    ]
    if note:
        parts.append(f"## Note\n{note}")
    return "\n\n".join(parts)
