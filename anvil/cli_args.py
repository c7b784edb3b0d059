"""The `anvil` command line's flags and its --help text (argparse), apart from cli.py's dispatch."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see cli.py
if TYPE_CHECKING:
    import argparse

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
  anvil engine status   the warm engine that starts runs at once (stop, start;
                        ANVIL_ENGINE=off turns it off)
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
  3 a job stopped for you, 4 a task run blocked on a question,
  75 the connection dropped mid-reply (-c goes on), 130 interrupted
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
                        help="work as a long job: 'phased' (strategic and tactical phases in turn; its instructions "
                             "are the prompt (-p), --instructions FILE, or your first message) or 'tdd' (the PRs of "
                             "the project's master plan, test first; a prompt adds notes); --resume JOB goes on "
                             "with a job")
    parser.add_argument("--instructions", metavar="FILE", help="with --workflow: the job's instructions, from FILE")
    parser.add_argument("--clear-halt", action="store_true",
                        help="with --workflow tdd: clear the halt of the newest job (or --resume JOB) once you put "
                             "the repository right, then exit")
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
