"""The `anvil` command: argument parsing only. It picks a front end and imports nothing heavy.

`--version` answers before argparse is even imported, so it costs no more than starting Python.
"""

from __future__ import annotations

import sys

# Not `typing.TYPE_CHECKING`: importing typing alone costs ~2 ms, a tenth of Python's own start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    from anvil.frontend.jobs import JobLaunch

EXIT_USAGE = 2


HELP_EPILOG = """\
commands:
  anvil [PROMPT]        the full-screen app (--plain: a line interface);
                        PROMPT is the first message
  anvil -p PROMPT       one headless run: the answer on stdout
  anvil -p --task FILE  run a Markdown task file (exit 4: blocked on a question)
  anvil tasks           this project's tasks; anvil answer TASK TEXT resumes one
  anvil eval SUITE...   measure anvil on a suite of tasks (see the README)
  anvil sessions        this project's sessions; --prune removes old ones
  anvil trust [PATH]    trust a folder's .anvil/ settings; --list, --forget
  anvil acp             serve an editor over the Agent Client Protocol
  anvil -V, --version   print the version

model and keys:
  default model: {model}
  (--model, ANVIL_MODEL or `model` in config change it; /model in a session)
  the provider's key, as litellm names it: ANTHROPIC_API_KEY, OPENAI_API_KEY,
  GEMINI_API_KEY, ...; none for --api-base or --model scripted.
  ANVIL_API_KEY is sent to whichever provider the model uses.
  ANVIL_<SETTING> sets a plain setting (ANVIL_MODEL, ANVIL_MAX_ITERATIONS, ...);
  BRAVE_API_KEY or TAVILY_API_KEY turn on web_search.

configuration, lowest priority first:
  ~/.config/anvil/config.toml     yours, every project ($XDG_CONFIG_HOME/anvil)
  .anvil/config.toml              the project's, at its root: the git root, or
                                  the nearest folder up holding .anvil/
  ANVIL_* variables, then these flags
  sessions, logs, history:        ~/.local/share/anvil/ ($XDG_DATA_HOME/anvil)

exit codes:
  0 done, 1 error (provider, config, session, max iterations), 2 bad usage,
  4 a task run blocked on a question, 130 interrupted
"""


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from anvil import DEFAULT_MODEL

    parser = argparse.ArgumentParser(
        prog="anvil", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A terminal coding assistant: a model reads, edits, searches and runs your code\n"
                    "through tools.",
        epilog=HELP_EPILOG.format(model=DEFAULT_MODEL),
    )
    parser.add_argument("first_prompt", nargs="?", metavar="PROMPT",
                        help="the first message of an interactive session (with -p: the prompt to run)")
    parser.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    parser.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", nargs="?", const="",
                        help="run one prompt headless and print the result ('-' reads it from stdin)")
    parser.add_argument("--model", help="any litellm model string (default: see below), e.g. openai/<name> with "
                                        "--api-base, or 'scripted' for the demo model")
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
                        help="replay a scripted session on a temporary copy of a demo project (no key, no "
                             "network), in the app; with -p, headless")
    parser.add_argument("--plain", action="store_true",
                        help="a line interface instead of the full-screen app; keeps your terminal's scrollback")
    parser.add_argument("--workflow", metavar="NAME",
                        help="work as a long job: 'phased' (strategic and tactical phases in turn). Its instructions "
                             "are the prompt (-p), --instructions FILE, or your first message; --resume JOB goes on "
                             "with a job")
    parser.add_argument("--instructions", metavar="FILE", help="with --workflow: the job's instructions, from FILE")
    parser.add_argument("--task", metavar="FILE", help="run a Markdown task file (YAML header: title, prd, verify, "
                        "max_iterations, workflow) headless; exit 4 when it ends blocked on a question")
    parser.add_argument("--answer", metavar="TEXT", help="answer the open question of a blocked task and resume it "
                        "(with --task FILE, or -c for the newest session); `anvil answer TASK TEXT` is the same")
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument("-c", "--continue", dest="continue_latest", action="store_true",
                        help="resume the newest session of this project (and the job it worked on)")
    resume.add_argument("--resume", metavar="ID", help="resume the session with this id (`anvil sessions` "
                                                       "lists them; with --workflow: the job)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list == ["--version"] or args_list == ["-V"]:
        from anvil import __version__

        print(f"anvil {__version__}")
        return 0
    if args_list[:1] == ["sessions"]:
        from anvil.cli_sessions import sessions_command

        return sessions_command(args_list[1:])
    if args_list[:1] == ["acp"]:
        from anvil.acp.server import main as acp_main

        return acp_main(args_list[1:])
    if args_list[:1] == ["trust"]:
        from anvil.frontend.trust import trust_command

        return trust_command(args_list[1:])
    if args_list[:1] == ["tasks"]:
        from anvil.frontend.tasks import tasks_command

        return tasks_command(args_list[1:])
    if args_list[:1] == ["eval"]:
        from anvil.eval.cli import main as eval_main

        return eval_main(args_list[1:])
    if args_list[:1] == ["answer"]:
        if len(args_list) < 3 or args_list[1].startswith("-") or args_list[2].startswith("-"):
            print('usage: anvil answer TASK "ANSWER" [--model M] [--output-format F] ...: answers the open question '
                  "of a blocked task and resumes its run", file=sys.stderr)
            return EXIT_USAGE
        args_list = ["-p", "--task", args_list[1], "--answer", args_list[2], *args_list[3:]]
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
        if (prompt is None or not prompt.strip()) and not (job and (job.instructions or job.resume)) \
                and args.task is None and args.answer is None:
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
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ConfigError, SessionError, ModelError, JobError, TaskStateError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


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
