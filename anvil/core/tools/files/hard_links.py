"""A file's other names: a file with several hard links is only as much inside the project as all its names are.

A hard link inside the project to a file outside it would let the file tools read and change that file. The
other names of a file cannot be looked up, only found by searching; so a file with more than one link is
searched for in the directories the tools work in (the project and the allowed directories), and used only
when every one of its links is found there. The search reads directory entries without a ``stat`` per file
(the inode number comes with the entry), stops once every link is found, and looks at no more than
:data:`SEARCH_LIMIT` entries: in a project larger than that a file with other names is refused, and the
refusal says so. Symbolic links are not followed; a directory that cannot be read makes the search incomplete.

Writes replace the file by a rename and never rewrite it in place, so changing a file by one of its names gives
that name the new content, and the other names keep the old one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from anvil.core.tools.errors import ToolError

#: directory entries looked at, at most, to find a file's other names
SEARCH_LIMIT = 50_000


@dataclass(frozen=True)
class LinkSearch:
    names: frozenset[Path]  # the file's names found in the directories searched
    complete: bool  # every entry was looked at (or every link found)
    looked_at: int  # directory entries looked at


def find_names(info: os.stat_result, bases: Sequence[Path], limit: int | None = None) -> LinkSearch:
    """The names of the file ``info`` describes under ``bases`` (at most ``limit`` entries looked at, by default
    :data:`SEARCH_LIMIT`), walked without following links."""
    limit = SEARCH_LIMIT if limit is None else limit
    roots = [base for base in bases if not any(other != base and base.is_relative_to(other) for other in bases)]
    stack, names, looked_at, complete = list(dict.fromkeys(roots)), set(), 0, True
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    looked_at += 1
                    if looked_at > limit:
                        return LinkSearch(frozenset(names), False, limit)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.inode() == info.st_ino and _same_file(entry, info):
                        names.add(Path(entry.path))
                        if len(names) >= info.st_nlink:
                            return LinkSearch(frozenset(names), True, looked_at)
        except OSError:
            complete = False  # a directory we cannot read may hold a name
    return LinkSearch(frozenset(names), complete, looked_at)


def _same_file(entry: os.DirEntry[str], info: os.stat_result) -> bool:
    try:
        found = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return (found.st_dev, found.st_ino) == (info.st_dev, info.st_ino)


def check_links(info: os.stat_result, bases: Sequence[Path], display: str) -> None:
    """Refuse a file with other names unless all of them are inside ``bases`` (ToolError says which case)."""
    if info.st_nlink <= 1:
        return
    limit = SEARCH_LIMIT
    search = find_names(info, bases, limit)
    if search.complete and len(search.names) >= info.st_nlink:
        return
    links = f"{display} has {info.st_nlink} hard links (other names for the same file)"
    where = "the project" if len(bases) == 1 else "the project and the allowed directories"
    if search.complete:
        why = f"{info.st_nlink - len(search.names)} of them are not in {where}"
    elif search.looked_at >= limit:
        why = (f"anvil stopped looking for them in {where} after {search.looked_at:,} entries, so it cannot tell "
               "whether they are all inside")
    else:
        why = (f"anvil could not read every directory of {where} to look for them, so it cannot tell whether they "
               "are all inside")
    raise ToolError(f"{links}, and {why}, so anvil treats the file as outside the project: the file tools will not "
                    "read or change it. Ask the person; they can replace it with a copy of its own (cp, then mv "
                    "over the link).")
