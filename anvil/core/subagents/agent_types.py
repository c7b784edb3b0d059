"""Sub-agent types: what a sub-agent is told and which tools it gets.

Three sources, later ones winning on a name clash so a project can redefine even a built-in type:

1. built-in: ``explore`` (read-only, and only the tools that read and search: read_file, grep, glob,
   list_files) and ``general`` (every tool the parent has, under the same approval policy);
2. the ``agents`` table of the configuration (:class:`AgentTypeConfig`, one entry per name);
3. ``.anvil/agents/*.md`` in the project: a ``---``-delimited header, then the system prompt::

       ---
       name: reviewer
       description: Reviews a change for bugs and missing tests
       tools: read_file, grep, glob          # or [read_file, grep], or one "- name" per line
       read_only: true                       # optional: drop every tool that can change anything
       ---
       You review code. ...

The header is a small ``key: value`` format parsed here rather than YAML, so anvil needs no YAML
dependency; it accepts the subset people write in these files (scalars, ``[a, b]``, ``- item`` lists,
``#`` comments). A file that cannot be read or parsed is skipped with a warning naming it.

Tool entries are names or fnmatch patterns (``mcp__github__*``). Tools only the main agent may use
(``Tool.main_agent_only``) are never given to a sub-agent: ``task``, so sub-agents cannot start sub-agents,
and ``exit_plan_mode``, since leaving plan mode is the parent's call.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from anvil.core.tools.base import ToolKind, ToolRegistry

TASK_TOOL_NAME = "task"


class AgentTypeConfig(BaseModel):
    """A custom sub-agent type from the configuration (``[agents.<name>]`` in TOML)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    description: str
    """One sentence the model reads when it picks a type: what this agent is good at."""
    system_prompt: str
    """The sub-agent's whole system prompt (anvil adds a short preamble about the project and the report)."""
    tools: list[str] | None = None
    """Tool names or fnmatch patterns (``mcp__github__*``); unset gives every tool the parent has but ``task``."""
    read_only: bool = False
    """Keep only tools that never change anything, whatever ``tools`` says."""
    max_iterations: int | None = Field(None, ge=1)
    """Model calls the sub-agent may make; unset uses the task tool's default."""


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str
    system_prompt: str
    #: names or fnmatch patterns; None means every tool of the parent (except ``task``)
    tools: tuple[str, ...] | None = None
    read_only: bool = False
    max_iterations: int | None = None
    #: where it was defined ("built-in", "config", or the .md file's path), for messages
    source: str = "built-in"
    #: only tools of these kinds (``Tool.kind``); None means any kind
    kinds: frozenset[ToolKind] | None = None


EXPLORE_PROMPT = """\
You explore a code base to answer a question. You can read files and search; you cannot change anything.
Search broadly first (grep, glob, list_files), then read the files that matter. Be thorough but quick: stop
when you can answer. Your final message is your report: answer the question directly, cite file paths
with line numbers, quote the few lines that prove the point, and say what you did not check."""

GENERAL_PROMPT = """\
You carry out one task in a code base with the tools you have. Read before you edit, keep changes small
and focused on the task, and check your work (run the tests or the relevant command) when you can.
Your final message is your report: what you did, which files you changed, how you checked it, and
anything left undone or uncertain."""

REVIEW_PROMPT = """\
You review a pull request before it is merged: its plan and its diff are below. You can read files and search; you
cannot change anything. Look for what must change before the merge: bugs, behaviour the plan asks for that is missing
or untested, tests that do not test what they claim, debugging output or temporary logging left in, dead code, and
names or structure that will mislead the next reader. Do not report matters of taste. End by calling report_review
exactly once: one finding per problem (title, detail, and file and line when you know them), or an empty list to
approve."""

#: sub-agent types workflows run themselves (not offered to the task tool): the TDD workflow's code review, which
#: reports through a tool of the workflow's own (report_review)
WORKFLOW_TYPES: dict[str, AgentType] = {
    "review": AgentType("review", "Read-only code review of a branch, ending with report_review.", REVIEW_PROMPT,
                        kinds=frozenset({"read", "search"}), read_only=True),
}

BUILTIN_TYPES: dict[str, AgentType] = {
    "explore": AgentType("explore", "Read-only search and reading: find code, answer questions about the "
                         "code base, gather context. Cannot change files.", EXPLORE_PROMPT,
                         kinds=frozenset({"read", "search"}), read_only=True),
    "general": AgentType("general", "A general-purpose agent with every tool (same approvals as you), for "
                         "a self-contained multi-step task.", GENERAL_PROMPT),
}


def load_agent_types(root: Path, configured: dict[str, AgentTypeConfig] | None = None,
                     dirs: list[Path] | None = None) -> tuple[dict[str, AgentType], list[str]]:
    """All agent types (built-in < config < ``.anvil/agents/*.md``) and warnings for files that were skipped.

    ``dirs`` overrides where the ``.md`` files are looked for (default: ``root/.anvil/agents``); pass the
    user-level directory first to let project files win over it.
    """
    types = dict(BUILTIN_TYPES)
    for name, config in (configured or {}).items():
        types[name] = AgentType(name, config.description, config.system_prompt,
                                tuple(config.tools) if config.tools is not None else None,
                                config.read_only, config.max_iterations, source="config")
    warnings: list[str] = []
    for directory in dirs if dirs is not None else [root / ".anvil" / "agents"]:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.md")):
            try:
                agent = parse_agent_file(path)
            except ValueError as exc:
                warnings.append(f"Skipped the sub-agent file {path}: {exc}")
                continue
            types[agent.name] = agent
    return types, warnings


def parse_agent_file(path: Path) -> AgentType:
    """One ``.anvil/agents/*.md`` file; raises ValueError with a message saying what to fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read it ({exc}); check its permissions and that it is UTF-8") from exc
    header, body = split_front_matter(text)
    name = str(header.pop("name", "") or path.stem).strip()
    description = str(header.pop("description", "")).strip()
    if not description:
        raise ValueError("the header has no 'description: ...' line; add one saying what this agent is for")
    if not body.strip():
        raise ValueError("the system prompt (the text after the closing ---) is empty")
    tools = header.pop("tools", None)
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    read_only = str(header.pop("read_only", "false")).strip().lower() in {"true", "yes", "1"}
    raw_iterations = header.pop("max_iterations", None)
    try:
        iterations = int(str(raw_iterations)) if raw_iterations not in (None, "") else None
    except ValueError:
        raise ValueError(f"max_iterations should be a whole number, not {raw_iterations!r}") from None
    # other keys (model, color... from other tools' agent formats) are tolerated and ignored
    return AgentType(name, description, body.strip(), tuple(tools) if tools is not None else None, read_only,
                     iterations, source=str(path))


def split_front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """``---`` header lines as a dict, and the body after it."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("it does not start with a '---' header line (name, description, tools, then '---')")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("the header opened with '---' is never closed by a second '---' line") from None
    header: dict[str, str | list[str]] = {}
    current: str | None = None
    for number, raw in enumerate(lines[1:end], start=2):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        if line.lstrip().startswith("- ") and current is not None:  # a "- item" under "key:"
            items = header.setdefault(current, [])
            if isinstance(items, list):
                items.append(_unquote(line.lstrip()[2:]))
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise ValueError(f"line {number} is not 'key: value': {raw.strip()!r}")
        current = key.strip()
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            header[current] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            header[current] = _unquote(value)
        else:
            header[current] = []
    return header, "\n".join(lines[end + 1:])


def _strip_comment(line: str) -> str:
    # a '#' starts a comment only after whitespace, so "C# code" in a description survives
    for index, char in enumerate(line):
        if char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def select_tools(parent: ToolRegistry, agent: AgentType) -> ToolRegistry:
    """The parent's tools this agent type may use, in the parent's order; never one only the main agent may use
    (``task``, ``exit_plan_mode``)."""
    chosen = ToolRegistry()
    for tool in parent.tools():
        if tool.main_agent_only or (agent.read_only and tool.mutates):
            continue
        if agent.kinds is not None and tool.kind not in agent.kinds:
            continue
        if agent.tools is not None and not any(fnmatch.fnmatchcase(tool.name, p) for p in agent.tools):
            continue
        chosen.add(tool)
    return chosen
