"""The trust question the interactive front ends ask before a session starts, and `anvil trust`.

A project whose ``.anvil/`` holds settings that run commands or send data (:mod:`anvil.trust`) is asked about
once for that content: the TUI as a modal, ``--plain`` as a prompt. Headless runs never ask: they say what was
ignored, and ``--trust`` applies it. The words are written here once.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from anvil.config import ConfigError, project_trust, trust_store
from anvil.frontend.lines import home_relative
from anvil.project import find_project_root
from anvil.trust import ProjectTrust

#: the answers, by key: trust (remembered for this content), or not this time (asked again next time)
CHOICES: tuple[tuple[str, str], ...] = (("t", "trust this folder"), ("n", "don't trust (this time)"))


@dataclass(frozen=True)
class TrustQuestion:
    title: str
    intro: str
    #: what the folder's configuration would run or change, a line each (``hooks: session_start runs `x```)
    items: tuple[str, ...]
    advice: str

    @property
    def hint(self) -> str:
        return " · ".join(f"{key} {label}" for key, label in CHOICES)


def trust_question(check: ProjectTrust) -> TrustQuestion:
    where = home_relative(check.root)
    if check.changed:
        files = f" ({', '.join(check.changed_files)} changed)" if check.changed_files else ""
        intro = (f"The configuration of {where} changed since you trusted it{files}. Its settings in .anvil/ "
                 "would now:")
    else:
        intro = f"{where} has settings in .anvil/ that run commands or send data:"
    return TrustQuestion(
        title="Trust this folder?", intro=intro, items=tuple(str(item) for item in check.items),
        advice="Trust it only if you know where this repository comes from. Without trust anvil still opens "
               "it, and ignores these settings this time.")


def decide(check: ProjectTrust, trusted: bool) -> bool | None:
    """Remember a yes for this folder and exactly this content. Returns what ``load_settings(trust=...)``
    takes: None (the remembered content decides, so a change since the question is not trusted) or False."""
    if not trusted:
        return False
    store = trust_store()
    try:
        store.remember(check.root, check.digest, check.scripts)
    except OSError as exc:
        raise ConfigError(f"Cannot remember that you trust {check.root}: {exc}. Check that {store.path.parent} is "
                          "writable, or pass --trust to apply its settings for one run.") from exc
    return None


# -- `anvil trust` -------------------------------------------------------------------------------------


def trust_command(argv: list[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """`anvil trust [PATH]`, `anvil trust --list`, `anvil trust --forget [PATH]`. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="anvil trust", description="Trust a folder's .anvil/ settings that run commands or send data "
        "(hooks, lint, verify, MCP servers, api_base, allow rules, ...), after listing them.")
    parser.add_argument("path", nargs="?", default=".", help="the project folder (default: this one)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--list", action="store_true", help="list the trusted folders")
    which.add_argument("--forget", action="store_true", help="stop trusting the folder: anvil asks again")
    args = parser.parse_args(argv)  # exits 2 with a usage message on bad arguments
    if args.list:
        return _list(out)
    given = Path(args.path).expanduser().resolve()
    root = find_project_root(given) if given.is_dir() else given  # a subdirectory: the project it belongs to
    if args.forget:
        try:
            forgotten = trust_store().forget(root)
        except OSError as exc:
            print(f"anvil trust: cannot update {trust_store().path}: {exc}. Check that it is writable.", file=err)
            return 1
        print(f"Forgot {home_relative(root)}: anvil asks before using its settings again." if forgotten
              else f"{home_relative(root)} was not trusted.", file=out)
        return 0
    if not root.is_dir():
        print(f"anvil trust: {args.path} is not a directory. Give a project folder.", file=err)
        return 2
    try:
        check = project_trust(root)
        if not check.items:
            print(f"Nothing in {home_relative(root)}'s configuration needs trust.", file=out)
            return 0
        decide(check, True)
    except ConfigError as exc:
        print(f"anvil trust: {exc}", file=err)
        return 1
    print(f"Trusted {home_relative(root)}. From now on these settings of the project apply:", file=out)
    for item in check.items:
        print(f"  {item}", file=out)
    print("anvil asks again if they change. `anvil trust --forget` undoes this.", file=out)
    return 0


def _list(out: TextIO) -> int:
    folders = trust_store().folders()
    if not folders:
        print("No trusted folders.", file=out)
        return 0
    for path, record in sorted(folders.items()):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.get("trusted_at", 0)))
        print(f"{home_relative(path)}  trusted {when}{_state(Path(path), record.get('digest'))}", file=out)
    return 0


def _state(root: Path, digest: object) -> str:
    if not root.is_dir():
        return " (the folder is gone)"
    try:
        check = project_trust(root)
    except ConfigError:
        return " (its configuration cannot be read)"
    return "" if check.digest == digest else " (changed since: anvil will ask again)"
