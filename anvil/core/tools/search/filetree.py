"""The tree ``list_files`` shows: directories first, file sizes, big directories summarised.

The tree is built breadth-first under a line budget, so a huge subdirectory cannot crowd out its
siblings: the top levels are always complete, and what did not fit is shown as counts.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from anvil.core.tools.search import ignore

#: The whole listing stops growing at this many lines.
MAX_LINES = 400
#: Entries shown per directory; the rest are counted ("… 340 more files, 12 dirs").
PER_DIR = 100
#: Always-skipped directories worth naming (the model should know a venv or node_modules exists);
#: the others (.git, caches) are left out silently.
MENTIONED = frozenset({"node_modules", ".venv", "venv", ".virtualenvs"})
SKIPPED_NOTE = "not listed"
VENV_NOTE = "virtualenv, not listed"


@dataclass
class Node:
    name: str
    is_dir: bool = True
    size: int = 0
    note: str = ""  # shown in parentheses: "1.2 KB", "12 files, 3 dirs", "not listed"
    children: list[Node] = field(default_factory=list)
    more: str = ""  # "340 more files, 12 dirs"


def human_size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""  # unreachable


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _counts(files: int, dirs: int) -> str:
    return ", ".join([plural(files, "file")] + ([plural(dirs, "dir")] if dirs else []))


def build_tree(start: Path, root: Path, max_depth: int) -> tuple[Node, int, bool]:
    """The tree under ``start``, the number of gitignored entries left out, and whether the line
    budget (rather than ``max_depth`` or the per-directory cap) cut it short."""
    if start != root and start.is_relative_to(root):
        rel0, rules = start.relative_to(root).as_posix() + "/", ignore.rules_for(root, start.parent)
    else:
        rel0, rules = "", ()
    top = Node(start.name)
    queue: deque[tuple[Node, str, str, ignore.Rules, int]] = deque([(top, str(start), rel0, rules, 0)])
    lines = ignored = 0
    cut = False
    while queue:
        node, path, rel, rules, depth = queue.popleft()
        listing = ignore.list_dir(path, rel, rules, skip_venv=depth > 0)
        if listing.is_venv:
            node.note = VENV_NOTE
            continue
        files_here = len(listing.files) + len(listing.links)
        if depth >= max_depth or lines >= MAX_LINES:
            cut = cut or depth < max_depth
            node.note = _counts(files_here, len(listing.dirs)) if files_here or listing.dirs else "empty"
            continue
        dirs = sorted(listing.dirs, key=lambda e: e.name.lower())
        files = sorted(listing.files + listing.links, key=lambda e: e.name.lower())
        ignored += listing.ignored
        room = min(PER_DIR, MAX_LINES - lines)
        shown_dirs = dirs[:room]
        shown_files = files[:room - len(shown_dirs)]
        for entry in shown_dirs:
            child = Node(entry.name)
            node.children.append(child)
            queue.append((child, entry.path, f"{rel}{entry.name}/", listing.rules, depth + 1))
        node.children += [Node(name, note=SKIPPED_NOTE) for name in listing.skipped if name in MENTIONED]
        node.children.sort(key=lambda n: n.name.lower())
        node.children += [_file_node(entry) for entry in shown_files]
        more_dirs, more_files = len(dirs) - len(shown_dirs), len(files) - len(shown_files)
        if more_dirs or more_files:
            node.more = plural(more_files, "more file") + (f", {plural(more_dirs, 'dir')}" * bool(more_dirs))
            cut = cut or room < PER_DIR  # the overall budget, not the per-directory cap, hid them
        if not node.children and not node.more:
            node.note = "empty" if not listing.ignored else "only gitignored entries"
        lines += len(node.children) + bool(node.more)
    return top, ignored, cut


def _file_node(entry: os.DirEntry[str]) -> Node:
    try:
        if entry.is_symlink():
            return Node(entry.name, is_dir=False, note=f"-> {os.readlink(entry.path)}")
        return Node(entry.name, is_dir=False, note=human_size(entry.stat(follow_symlinks=False).st_size))
    except OSError:
        return Node(entry.name, is_dir=False, note="unreadable")


def render(node: Node, indent: str, out: list[str]) -> tuple[int, int]:
    """Append the children of ``node``; returns the (files, dirs) shown."""
    files = dirs = 0
    for child in node.children:
        label = f"{child.name}/" if child.is_dir else child.name
        out.append(f"{indent}{label}" + (f"  ({child.note})" if child.note else ""))
        if child.is_dir:
            dirs += child.note not in (SKIPPED_NOTE, VENV_NOTE)
            f, d = render(child, indent + "  ", out)
            files, dirs = files + f, dirs + d
        else:
            files += 1
    if node.more:
        out.append(f"{indent}… {node.more}")
    return files, dirs


def list_tree(start: Path, root: Path, shown_as: str, max_depth: int) -> tuple[str, int, int]:
    """The text ``list_files`` returns for ``start``, with the number of files and dirs it shows."""
    if start.is_file():
        return f"{shown_as}  ({human_size(start.stat().st_size)})", 1, 0
    top, ignored, cut = build_tree(start, root, max_depth)
    header = "./" if shown_as == "." else shown_as.rstrip("/") + "/"
    out = [header + (f"  ({top.note})" if top.note else "")]
    files, dirs = render(top, "  ", out)
    if ignored:
        out.append(f"[{ignored} gitignored {'entry' if ignored == 1 else 'entries'} not shown]")
    if cut:
        out.append(f"[Listing cut at about {MAX_LINES} lines. List a subdirectory (path=...) or lower "
                   "max_depth to see more.]")
    return "\n".join(out), files, dirs
