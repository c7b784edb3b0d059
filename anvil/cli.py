"""The `anvil` command: argument parsing only. It picks a front end and imports nothing heavy.

`--version` answers before argparse is even imported, so it costs no more than starting Python.
"""

from __future__ import annotations

import sys

# Not `typing.TYPE_CHECKING`: importing typing alone costs ~2 ms, a tenth of Python's own start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="anvil",
        description="A terminal coding assistant: a model reads, edits, searches and runs your code through "
                    "tools. Run `anvil -p PROMPT` for one headless run; `anvil sessions` lists sessions; "
                    "`anvil trust` trusts this folder's .anvil/ settings; `anvil acp` serves an editor (ACP).",
        epilog="Settings come from ~/.config/anvil/config.toml, .anvil/config.toml, ANVIL_* variables and "
               "these flags, in increasing priority.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", nargs="?", const="",
                        help="run one prompt headless and print the result ('-' reads it from stdin)")
    parser.add_argument("--model", help="litellm model string, e.g. anthropic/claude-sonnet-4-5, "
                                        "openai/<name> with --api-base, or 'scripted' for the demo model")
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server (llama.cpp, vLLM, Ollama)")
    parser.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text",
                        help="headless output: the answer (text), one JSON result (json), or one event "
                             "per line then the result (stream-json)")
    parser.add_argument("--input-format", choices=["text", "stream-json"], default="text",
                        help="headless input: the prompt (text), or one user message a line on stdin, each a "
                             "turn (stream-json, with --output-format stream-json)")
    parser.add_argument("--auto-approve", action="store_true", default=None,
                        help="run every tool without asking, except the hard-deny list (trusted repos only)")
    parser.add_argument("--trust", action="store_true",
                        help="apply this folder's .anvil/ settings that run commands or send data (hooks, MCP "
                             "servers, api_base, allow rules, ...) for this run, without asking")
    parser.add_argument("--max-iterations", type=int, metavar="N", help="model calls allowed per turn "
                        "(default 50)")
    parser.add_argument("--mode", choices=["ask", "accept_edits", "auto", "plan"],
                        help="approval mode to start in; plan: read and plan only, then propose the plan")
    parser.add_argument("--theme", metavar="NAME", help="TUI theme: anvil-dark, anvil-light, anvil-high-contrast "
                                                       "or one of yours in ~/.config/anvil/themes/")
    parser.add_argument("--demo", action="store_true",
                        help="replay a scripted session in the app on a copy of a demo project (no key, no network)")
    parser.add_argument("--plain", action="store_true",
                        help="a line interface instead of the full-screen app; keeps your terminal's scrollback")
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument("-c", "--continue", dest="continue_latest", action="store_true",
                        help="resume the newest session of this directory")
    resume.add_argument("--resume", metavar="ID", help="resume the session with this id")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        if sys.stdout is not None:
            sys.stdout.flush()  # a reader that went away is found here, not in a traceback at exit
        return code
    except BrokenPipeError:
        # `anvil sessions | head`: the reader has what it wanted; stop writing, quietly (Python's own recipe).
        _quiet_stdout()
        return 1


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the buffered rest is dropped at exit instead of raising again."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):  # no stdout to quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _main(argv: list[str] | None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list == ["--version"] or args_list == ["-V"]:
        from anvil import __version__

        print(f"anvil {__version__}")
        return 0
    if args_list[:1] == ["sessions"]:
        return _sessions(args_list[1:])
    if args_list[:1] == ["acp"]:
        from anvil.acp.server import main as acp_main

        return acp_main(args_list[1:])
    if args_list[:1] == ["trust"]:
        from anvil.frontend.trust import trust_command

        return trust_command(args_list[1:])
    parser = build_parser()
    args = parser.parse_args(args_list)  # exits 2 with a usage message on bad flags
    if args.version:
        from anvil import __version__

        print(f"anvil {__version__}")
        return 0
    if args.max_iterations is not None and args.max_iterations < 1:
        parser.error("--max-iterations must be at least 1")
    if args.prompt is None and args.input_format == "text":
        if args.plain:
            return _plain(args)
        return _tui(args)
    return _headless(args)


def _plain(args: Any) -> int:
    """`anvil --plain`: the prompt_toolkit line REPL (anvil/plain/)."""
    from anvil.plain.repl import launch

    return launch(_flags(args), resume=args.resume, continue_latest=args.continue_latest, trust=_trust(args))


def _flags(args: Any) -> dict[str, Any]:
    return {"model": args.model, "api_base": args.api_base, "auto_approve": args.auto_approve,
            "max_iterations": args.max_iterations, "mode": args.mode}


def _trust(args: Any) -> bool | None:
    """``--trust`` applies the project's risky settings; without it, what the person trusted before decides."""
    return True if args.trust else None


def _read_prompt(value: str) -> str | None:
    if value != "-":
        return value
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read()


def _headless(args: Any) -> int:
    import asyncio
    from pathlib import Path

    from anvil.config import ConfigError, load_settings
    from anvil.core.model.errors import ModelError
    from anvil.core.session.store import SessionError

    if args.input_format == "stream-json":
        problem = _stream_input_problem(args)
        if problem:
            print(f"anvil: {problem}", file=sys.stderr)
            return EXIT_USAGE
        prompt: str | None = args.prompt or None
    else:
        prompt = _read_prompt(args.prompt or "")
        if prompt is None or not prompt.strip():
            print("anvil: the prompt is empty. Give it after -p, or pipe it in with -p -.", file=sys.stderr)
            return EXIT_USAGE
    try:
        settings = load_settings(Path.cwd(), _flags(args), trust=_trust(args))
        from anvil.headless import run_headless
        from anvil.runtime import open_runtime

        runtime = open_runtime(settings, Path.cwd(), resume=args.resume, continue_latest=args.continue_latest,
                               interactive=False)
        return asyncio.run(run_headless(runtime, prompt, args.output_format, input_format=args.input_format))
    except BrokenPipeError:
        # The reader went away (`anvil -p ... | head`): not an error worth a traceback.
        _quiet_stdout()
        return 1
    except (ConfigError, SessionError, ModelError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _stream_input_problem(args: Any) -> str | None:
    """What is wrong with ``--input-format stream-json`` as given: stdin holds the messages, stream-json the
    answers (as in Claude Code)."""
    if args.output_format != "stream-json":
        return "--input-format stream-json needs --output-format stream-json (one result line per message)."
    if args.prompt == "-":
        return "with --input-format stream-json the messages come on stdin; -p - has nothing left to read."
    return None


def _tui(args: Any) -> int:
    """The Textual app. Settings are validated inside it, after the first paint, so errors show there."""
    import os
    from pathlib import Path

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("anvil: the interactive app needs a terminal; use `anvil -p PROMPT` in scripts and pipes.",
              file=sys.stderr)
        return EXIT_USAGE
    flags = _flags(args)
    if args.theme:
        flags["theme"] = args.theme
    model = None
    demo_prompt = None
    if args.demo:
        from anvil.tui.demo import DEMO_PROMPT, DemoError, demo_environment, demo_model, prepare_demo_project

        try:
            root = prepare_demo_project()
        except (DemoError, OSError) as exc:
            print(f"anvil: {exc}", file=sys.stderr)
            return 1
        os.chdir(root)
        demo_environment()
        flags.update(model="scripted", auto_approve=False)
        model, demo_prompt = demo_model(), DEMO_PROMPT
    from anvil.tui.app import AnvilApp

    app = AnvilApp(Path.cwd(), flags=flags, model=model, resume=args.resume, continue_latest=args.continue_latest,
                   theme=args.theme, demo_prompt=demo_prompt, trust=_trust(args))
    try:
        code = app.run()
    finally:
        if app.runtime is not None:  # the app closes it on a normal exit; this covers a crash
            app.runtime.session.close()
    if app.exit_signal is not None:  # SIGTERM, SIGHUP: the app closed; the process ends now (anvil/tui/exiting.py)
        from anvil.tui.exiting import end_after_signal

        end_after_signal(app, app.exit_signal)
    app.stop_watching_signals()
    if app.return_code not in (None, 0):
        return app.return_code
    return code or 0


def _sessions(argv: list[str]) -> int:
    import argparse
    import time
    from pathlib import Path

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
    store = SessionStore(data_dir(), Path.cwd())
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


if __name__ == "__main__":
    sys.exit(main())
