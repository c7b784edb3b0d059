"""The `anvil` command: argument parsing only. It picks a front end and imports nothing heavy.

`--version` answers before argparse is even imported, so it costs no more than starting Python.
"""

from __future__ import annotations

import sys

# Not `typing.TYPE_CHECKING`: importing typing alone costs ~2 ms, a tenth of Python's own start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from anvil.frontend.jobs import JobLaunch

EXIT_USAGE = 2


#: ``anvil NAME ...``: commands of their own, each in a module imported only when it runs
SUBCOMMANDS = {"sessions": ("anvil.cli_sessions", "sessions_command"), "acp": ("anvil.acp.server", "main"),
               "trust": ("anvil.frontend.trust", "trust_command"), "tasks": ("anvil.frontend.tasks", "tasks_command"),
               "eval": ("anvil.eval.cli", "main")}


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
    if args_list[:1] and args_list[0] in SUBCOMMANDS:
        module, function = SUBCOMMANDS[args_list[0]]
        command: Any = getattr(__import__(module, fromlist=[function]), function)  # imported only when used
        return int(command(args_list[1:]))
    if args_list[:1] == ["answer"]:
        if len(args_list) < 3 or args_list[1].startswith("-") or args_list[2].startswith("-"):
            print('usage: anvil answer TASK "ANSWER" [--model M] [--output-format F] ...: answers the open question '
                  "of a blocked task and resumes its run", file=sys.stderr)
            return EXIT_USAGE
        args_list = ["-p", "--task", args_list[1], "--answer", args_list[2], *args_list[3:]]
    from anvil.cli_args import build_parser

    parser = build_parser()
    args = parser.parse_args(args_list)  # exits 2 with a usage message on bad flags
    if args.version:
        from anvil import __version__

        print(f"anvil {__version__}")
        return 0
    if args.max_iterations is not None and args.max_iterations < 1:
        parser.error("--max-iterations must be at least 1")
    problem = _job_problem(args)
    if problem:
        parser.error(problem)
    if args.clear_halt:
        from anvil.frontend.jobs import clear_halt_command

        return clear_halt_command(_project_root(), _flags(args), args.workflow, args.resume, _trust(args))
    if args.first_prompt is not None and args.prompt is not None:
        if args.prompt:
            parser.error("give the prompt once: after -p, or as PROMPT")
        args.prompt, args.first_prompt = args.first_prompt, None  # `anvil -p --model x "prompt"`
    if args.prompt is None and args.input_format == "text" and args.task is None and args.answer is None:
        if args.plain:
            return _plain(args)
        return _tui(args)
    if args.demo:
        return _demo_headless(args)
    return _headless(args)


#: ``anvil NAME ARGS``: each subcommand's module and function, imported only when it runs
def _plain(args: Any) -> int:
    """`anvil --plain`: the prompt_toolkit line REPL (anvil/plain/)."""
    from anvil.plain.launch import launch

    job = _job(args)
    if isinstance(job, int):
        return job
    return launch(_flags(args), resume=None if job else args.resume, continue_latest=args.continue_latest,
                  trust=_trust(args), job=job, first_prompt=args.first_prompt)


def _job_problem(args: Any) -> str | None:
    """What is wrong with the workflow flags together, for argparse to report."""
    if args.instructions and not args.workflow:
        return "--instructions goes with --workflow NAME (a job's instructions)"
    if args.workflow and args.continue_latest:
        return "-c resumes the newest session and the job it worked on by itself; leave out --workflow"
    if args.workflow and args.instructions and args.resume:
        return "--instructions starts a new job, --resume JOB goes on with one: give one of them"
    if args.workflow and args.input_format == "stream-json":
        return "--workflow takes its instructions from -p or --instructions, not from --input-format stream-json"
    if args.clear_halt and not args.workflow:
        return "--clear-halt goes with --workflow NAME (the workflow whose job halted)"
    if args.clear_halt and (args.prompt is not None or args.first_prompt or args.continue_latest or args.instructions):
        return "--clear-halt only clears the halt and exits: leave out the prompt, -c and --instructions"
    return None


def _job(args: Any) -> JobLaunch | int | None:
    """The job ``--workflow`` asks for (None without it); EXIT_USAGE, said on stderr, when --instructions cannot
    be read."""
    if not args.workflow:
        return None
    from anvil.frontend.jobs import JobLaunch

    instructions = None
    if args.instructions:
        try:
            with open(args.instructions, encoding="utf-8") as file:
                instructions = file.read()
        except (OSError, UnicodeDecodeError) as exc:
            print(f"anvil: cannot read --instructions {args.instructions}: {getattr(exc, 'strerror', None) or exc}.",
                  file=sys.stderr)
            return EXIT_USAGE
        if not instructions.strip():
            print(f"anvil: --instructions {args.instructions} is empty; write what the job is for in it.",
                  file=sys.stderr)
            return EXIT_USAGE
    return JobLaunch(args.workflow, instructions, args.resume)


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


def _headless(args: Any, model: Any = None) -> int:
    import asyncio

    from anvil.config import ConfigError, load_settings
    from anvil.core.model.errors import ModelError
    from anvil.core.session.store import SessionError
    from anvil.core.tasks.state import TaskStateError
    from anvil.core.workflows.base import JobError

    job = _job(args)
    if isinstance(job, int):
        return job
    if args.input_format == "stream-json":
        problem = _stream_input_problem(args)
        if problem:
            print(f"anvil: {problem}", file=sys.stderr)
            return EXIT_USAGE
        prompt: str | None = args.prompt or None
    else:
        prompt = _read_prompt(args.prompt or "")
        if (prompt is None or not prompt.strip()) and _needs_prompt(args, job):
            print("anvil: the prompt is empty. Give it after -p, or pipe it in with -p -.", file=sys.stderr)
            return EXIT_USAGE
    task = None
    if args.task is not None or args.answer is not None:
        task, job = _task_launch(args, prompt or ""), None  # the task run starts its workflow's job itself
        if task is None:
            return EXIT_USAGE
    try:
        root = _project_root()
        settings = load_settings(root, _flags(args), trust=_trust(args))
        from anvil.headless import run_headless
        from anvil.runtime import open_runtime

        resume = task.resume if task is not None else None if job else args.resume
        runtime = open_runtime(settings, root, resume=resume, interactive=False, model=model,
                               continue_latest=args.continue_latest and task is None,
                               resume_job=(job.workflow, job.resume) if job and job.resume else None)
        return asyncio.run(run_headless(runtime, prompt, args.output_format, input_format=args.input_format,
                                        job=job, task=task))
    except BrokenPipeError:
        # The reader went away (`anvil -p ... | head`): not an error worth a traceback.
        _quiet_stdout()
        return 1
    except (ConfigError, SessionError, ModelError, JobError, TaskStateError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _needs_prompt(args: Any, job: JobLaunch | None) -> bool:
    """A headless run needs a prompt, unless a task, a job's instructions or a job that needs none (TDD) gives the
    work, or it goes on with a job."""
    from anvil.frontend.jobs import needs_instructions

    if args.task is not None or args.answer is not None:
        return False
    return not (job and (job.instructions or job.resume or not needs_instructions(job.workflow)))


def _task_launch(args: Any, prompt: str) -> Any:
    """The task run these flags ask for, or None after saying in one line why it cannot start. A task's workflow
    (--workflow, else the task file's) runs as the task's job: the task is its instructions."""
    from anvil.config import data_dir
    from anvil.frontend.tasks import TaskStartError, prepare_launch

    if args.input_format != "text":
        print("anvil: --task and --answer take no --input-format stream-json (a task is one run).", file=sys.stderr)
        return None
    try:
        return prepare_launch(_project_root(), data_dir(), task=args.task, answer=args.answer, resume=args.resume,
                              continue_latest=args.continue_latest, extra=prompt, workflow=args.workflow,
                              keep_iterations=args.max_iterations is not None)
    except TaskStartError as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return None


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

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("anvil: the interactive app needs a terminal; use `anvil -p PROMPT` in scripts and pipes.",
              file=sys.stderr)
        return EXIT_USAGE
    job = _job(args)
    if isinstance(job, int):
        return job
    flags = _flags(args)
    if args.theme:
        flags["theme"] = args.theme
    model = None
    demo_prompt = None
    demo_root: Path | None = None
    if args.demo:
        from anvil.tui.demo import DEMO_PROMPT, DemoError, demo_environment, demo_model, prepare_demo_project

        try:
            demo_root = prepare_demo_project()
        except (DemoError, OSError) as exc:
            print(f"anvil: {exc}", file=sys.stderr)
            return 1
        os.chdir(demo_root)
        demo_environment(demo_root)
        flags.update(model="scripted", auto_approve=False)
        model, demo_prompt = demo_model(), DEMO_PROMPT
    from anvil.tui.app import AnvilApp

    app = AnvilApp(_project_root(), flags=flags, model=model, resume=None if job else args.resume,
                   continue_latest=args.continue_latest, theme=args.theme, demo_prompt=demo_prompt, trust=_trust(args),
                   job=job, first_prompt=args.first_prompt)
    try:
        code = app.run()
    finally:
        if app.runtime is not None:  # the app closes it on a normal exit; this covers a crash
            app.runtime.session.close()
        if demo_root is not None:
            from anvil.tui.demo import remove_demo_project

            remove_demo_project(demo_root)
    if app.exit_signal is not None:  # SIGTERM, SIGHUP: the app closed; the process ends now (anvil/tui/exiting.py)
        from anvil.tui.exiting import end_after_signal

        end_after_signal(app, app.exit_signal)
    app.stop_watching_signals()
    if app.farewell and demo_root is None:  # the demo's session went with its temporary directory
        print(app.farewell)
    if app.return_code not in (None, 0):
        return app.return_code
    return code or 0


def _project_root() -> Path:
    from pathlib import Path

    from anvil.project import find_project_root

    return find_project_root(Path.cwd())


def _demo_headless(args: Any) -> int:
    """`anvil --demo -p PROMPT`: the demo's scripted session, headless, on a temporary copy of the demo project
    (removed afterwards). Its approvals are granted: nothing but that copy is touched, and nobody could answer."""
    import os

    from anvil.tui.demo import DemoError, demo_environment, demo_model, prepare_demo_project, remove_demo_project

    try:
        root = prepare_demo_project()
    except (DemoError, OSError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    here = os.getcwd()
    try:
        os.chdir(root)
        demo_environment(root)
        args.model, args.auto_approve, args.resume, args.continue_latest = "scripted", True, None, False
        model = demo_model()
        model.delay = 0
        return _headless(args, model=model)
    finally:
        os.chdir(here)
        remove_demo_project(root)


if __name__ == "__main__":
    sys.exit(main())
