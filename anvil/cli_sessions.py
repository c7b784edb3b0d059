"""`anvil sessions`: list this project's sessions, or prune old ones (``--prune``). Imported by cli.py only when
the subcommand runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from anvil.project import find_project_root


def sessions_command(argv: list[str]) -> int:
    """`anvil sessions [--prune ...]`: this project's sessions, newest first, or pruning old ones."""
    import time

    from anvil.config import data_dir
    from anvil.core.session.store import SessionStore

    parser = argparse.ArgumentParser(
        prog="anvil sessions", description="List this directory's sessions, newest first; resume one with "
        "`anvil --resume ID` or the newest with `anvil --continue`. With --prune, remove old ones.")
    parser.add_argument("--prune", action="store_true", help="remove sessions (the file, its checkpoints and "
                        "command logs) chosen by --older-than and/or --keep")
    parser.add_argument("--older-than", type=float, metavar="DAYS", help="with --prune: sessions not used for DAYS")
    parser.add_argument("--keep", type=int, metavar="N", help="with --prune: always keep the N newest of a project")
    parser.add_argument("--dry-run", action="store_true", help="with --prune: list what would go, remove nothing")
    parser.add_argument("--all-projects", action="store_true", help="with --prune: every project's sessions, "
                        "not only this directory's")
    args = parser.parse_args(argv)  # exits 2 with a usage message on bad arguments
    store = SessionStore(data_dir(), find_project_root(Path.cwd()))  # the same project from any subdirectory
    if args.prune:
        return _prune(parser, args, store)
    if args.older_than is not None or args.keep is not None or args.dry_run or args.all_projects:
        parser.error("--older-than, --keep, --dry-run and --all-projects go with --prune")
    sessions = store.list()
    if not sessions:
        print(f"No sessions yet for {store.project_root}.")
        return 0
    print(f"{'ID':<24} {'STARTED':<17} {'TURNS':>5}  FIRST PROMPT")
    for s in sessions:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created))
        prompt = " ".join(s.first_prompt.split())
        prompt = prompt[:60] + "…" if len(prompt) > 61 else prompt
        print(f"{s.id:<24} {started:<17} {s.turns:>5}  {prompt}")
    return 0


def _prune(parser: argparse.ArgumentParser, args: Any, store: Any) -> int:
    """`anvil sessions --prune`: what goes is listed (with --dry-run, only listed)."""
    import time

    from anvil.core.session.retention import all_projects, apply_prune, plan_prune

    if args.older_than is None and args.keep is None:
        parser.error("--prune needs --older-than DAYS, --keep N, or both")
    if (args.older_than is not None and args.older_than < 0) or (args.keep is not None and args.keep < 0):
        parser.error("--older-than and --keep take a number of 0 or more")
    projects = all_projects(store.data_dir) if args.all_projects else [store.dir.name]
    plan = plan_prune(store.data_dir, projects, older_than_days=args.older_than, keep=args.keep)
    where = "any project" if args.all_projects else str(store.project_root)
    if not plan:
        print(f"Nothing to prune for {where}.")
        return 0
    for item in plan:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.updated))
        project = f"  {item.project}" if args.all_projects else ""
        print(f"{item.session_id:<24} last used {used}  {_megabytes(item.size):>9}{project}")
    total = _megabytes(sum(item.size for item in plan))
    if args.dry_run:
        print(f"Would remove {len(plan)} session(s), {total} (dry run: nothing was removed).")
        return 0
    problems = apply_prune(plan)
    for problem in problems:
        print(f"anvil sessions: {problem}", file=sys.stderr)
    print(f"Removed {len(plan)} session(s), {total}.")
    return 1 if problems else 0


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"
