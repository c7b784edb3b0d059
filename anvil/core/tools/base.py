"""The tool contract: what every tool is, what it gets, what it returns.

A tool is a class with a name, a description written for the model, a pydantic ``Args`` model
(its JSON schema is what the model sees), the traits that say what it is (its kind, whether it mutates,
what approval it needs) and ``async run(args, ctx)``.
Tools never raise into the loop: :class:`ToolError` carries a message back to the model, and the
registry turns bad arguments and unexpected exceptions into error results too.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from anvil.core.events import Event
from anvil.core.masking import SecretMasker
from anvil.core.sandbox.sandbox import Sandbox
from anvil.core.session.checkpoints import CheckpointStore, NullCheckpointStore
from anvil.core.session.trouble import WriteTrouble
from anvil.core.tools.paths import default_user_config_dir, resolve_path


@dataclass
class ToolResult:
    """What a tool returns. ``output`` is what the model reads; ``summary``, ``diff`` and ``data`` are for front
    ends; ``end_turn`` and ``changed`` are for the loop."""

    output: str
    ok: bool = True
    summary: str = ""
    diff: str | None = None
    data: dict[str, Any] | None = None
    #: the turn should end after this call (a plan handed over for review when nobody can approve it)
    end_turn: bool = False
    #: whether the call changed the project's files; None leaves it to the tool's traits (see Tool.mutates)
    changed: bool | None = None
    #: images for the model to look at (``mime_type``, base64 ``data``), shown to models that take images
    images: list[dict[str, str]] = field(default_factory=list)
    #: the call cannot go on without the person, and nobody can answer in this run (a headless task run): the
    #: question; the loop ends the turn ``blocked`` after this reply's calls
    blocked: str | None = None


class ToolArgs(BaseModel):
    """Base for tool arguments: unknown keys are rejected so the model learns the real names."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class ToolSettings:
    """The part of the configuration tools read. Front ends fill it from the settings."""

    allowed_dirs: list[Path] = field(default_factory=list)
    lint: dict[str, str] = field(default_factory=dict)
    lint_timeout: float = 20.0
    test_command: str | None = None
    output_budget: int = 16_000
    default_timeout: float = 120.0
    max_timeout: float = 600.0
    #: anvil's user configuration directories: the file tools never write there without the person
    config_dirs: list[Path] = field(default_factory=lambda: [default_user_config_dir()])
    #: bytes one command's log keeps (head and tail); all command logs together; 0 for no limit
    log_cap: int = 50 * 1024 * 1024
    logs_total_cap: int = 500 * 1024 * 1024
    #: seconds a background command may run before it is stopped; 0 for no limit
    background_timeout: float = 7200.0
    #: files in the project that run outside the sandbox without asking (named by hooks and MCP servers, and by
    #: lint, verify and test_command when commands are not sandboxed): the file tools never write them unasked
    outside_scripts: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class FileStamp:
    """What a file looked like when the model last read it, to refuse blind overwrites: a change keeps none
    of these the same unless someone reset the time on purpose, and then the content hash still differs."""

    size: int
    mtime_ns: int
    inode: int
    device: int
    #: sha256 of the bytes the model read
    digest: str

    @classmethod
    def of(cls, info: os.stat_result, digest: str) -> FileStamp:
        return cls(info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev, digest)

    def same_metadata(self, info: os.stat_result) -> bool:
        return (self.size, self.mtime_ns, self.inode, self.device) == (
            info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev)


@dataclass(frozen=True)
class TerminalRun:
    """A command run in an editor's terminal: its output (the end of it, when long), how it ended."""

    output: str
    exit_code: int | None
    timed_out: bool = False


class EditorTerminal(Protocol):
    """An editor's terminal that runs a foreground command where the person watches it (an ACP client's).

    It runs ``argv`` exactly as given (the sandbox's command line: the sandbox holds), in ``cwd`` with ``env``;
    past ``timeout`` seconds it kills the command and says so; a cancelled call kills it too."""

    async def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> TerminalRun: ...


@dataclass
class ToolContext:
    """Everything a tool may touch. One per session; tools keep their own state in ``state``."""

    root: Path
    data_dir: Path
    session_id: str = "session"
    settings: ToolSettings = field(default_factory=ToolSettings)
    checkpoints: CheckpointStore = field(default_factory=NullCheckpointStore)
    #: known secret values, masked in what anvil writes (command logs, the session)
    secrets: SecretMasker = field(default_factory=SecretMasker)
    emit: Callable[[Event], None] = lambda event: None
    #: Show a request event (QuestionAsked, PlanProposed) to the person and wait for its answer.
    #: None when nobody can answer (headless): tools then tell the model to decide for itself.
    ask: Callable[[Event], Awaitable[Any]] | None = None
    reads: dict[Path, FileStamp] = field(default_factory=dict)
    todos: list[Any] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    cleanups: list[Callable[[], Any]] = field(default_factory=list)
    #: writers of tools' files (command logs) whose failures and recoveries the loop tells the person, once each
    troubles: list[WriteTrouble] = field(default_factory=list)
    #: what tools forget when the conversation starts afresh (a workflow's new phase): see ``new_conversation``
    resets: list[Callable[[], None]] = field(default_factory=list)
    #: where commands run: the OS sandbox of the session, or none (mode "off") when not given
    sandbox: Sandbox = field(default=None)  # type: ignore[assignment]
    #: a file's text as the person's editor has it, unsaved changes included (an ACP client's), or None when
    #: the editor does not have it open or cannot say; read_file shows it after its own checks of the path
    editor_text: Callable[[Path], Awaitable[str | None]] | None = None
    #: the editor's terminal foreground commands run in, when the person chose that; None: anvil runs them
    terminal: EditorTerminal | None = None

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        if self.sandbox is None:
            self.sandbox = Sandbox.disabled(self.root, self.session_id)

    def resolve(self, path: str) -> Path:
        """A model-supplied path, made absolute and checked to be inside the project."""
        return resolve_path(path, self.root, self.settings.allowed_dirs)

    def display(self, path: Path) -> str:
        """The path as the model and the person should see it: relative to the root when inside."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)

    def new_conversation(self) -> None:
        """A fresh conversation begins (a workflow's new phase): the files read in the old one must be read again
        before they are overwritten, and tools drop what only the old conversation knew (the shell's directory)."""
        self.reads.clear()
        for reset in self.resets:
            reset()

    def record_read(self, path: Path, info: os.stat_result, digest: str) -> None:
        """Remember that the model saw ``path`` as it was when ``info`` was taken, with content hash ``digest``."""
        self.reads[path] = FileStamp.of(info, digest)

    async def close(self) -> None:
        """End what tools left running (background commands); called when the session ends."""
        import inspect

        for cleanup in reversed(self.cleanups):
            try:
                result = cleanup()
                if inspect.isawaitable(result):
                    await result
            except Exception:  # a failing cleanup must not stop the others
                pass
        self.cleanups.clear()


#: What a tool does, in the Agent Client Protocol's words (front ends and ACP clients show calls by kind).
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
#: What the approval policy asks of a call before it runs:
#: none: nothing, it runs; edit: it changes files, so it asks only when the person wants edits approved
#: (``ask_edits``); command: its shell command is judged by the command policy (rules per simple command,
#: risky forms, the hard-deny list); rule: it asks unless a tool rule (``name(subject)``) allows it.
Approval = Literal["none", "edit", "command", "rule"]


class Tool(ABC):
    """Base class for tools. Subclasses set the class attributes and implement ``run``.

    The traits (``kind``, ``mutates``, ``approval``, ``rule_subject``, ``command``, ``write_targets``,
    ``runs_tests``, ``polls``, ``main_agent_only``, ``planning``) say what the tool is; the policy, the loop,
    sub-agents and workflows decide from them, never from the tool's name.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[ToolArgs]] = ToolArgs
    kind: ClassVar[ToolKind] = "other"
    #: It can change something (files, processes, the world outside): plan mode refuses it, read-only
    #: sub-agents do not get it, and a successful call counts as changing the project's files unless it
    #: is of kind "execute" (what commands change is what verification is for) or its result says otherwise.
    mutates: ClassVar[bool] = False
    approval: ClassVar[Approval] = "none"
    #: It runs the project's tests (stage words: testing, verifying; a failure makes the next edits "fixing").
    runs_tests: ClassVar[bool] = False
    #: Calling it again with the same arguments is its point (polling a background command): the loop guard
    #: counts a repeat only when nothing new came back.
    polls: ClassVar[bool] = False
    #: Only the main agent may use it (starting sub-agents, leaving plan mode): sub-agents never get it.
    main_agent_only: ClassVar[bool] = False
    #: A planning phase offers it (a phased job's strategic phases): it reads, searches or writes whole files, and
    #: runs nothing.
    planning: ClassVar[bool] = False

    def rule_subject(self, args: Any) -> str | None:
        """What a tool rule's subject is matched against (``web_fetch(domain:docs.python.org)``); None when
        the tool's rules name only the tool (``run_tests(*)``)."""
        return None

    def command(self, args: Any) -> str | None:
        """The shell command this call runs, for tools whose approval is "command"; None otherwise."""
        return None

    def shown_command(self, args: Any, ctx: ToolContext) -> tuple[str, Path] | None:
        """For a tool that runs a command its approval is not about (its rule names the tool, ``run_tests(*)``):
        the exact command line and the directory it would run in, shown when the person is asked; None for the
        rest."""
        return None

    def write_targets(self, args: Any) -> list[str]:
        """The paths this call writes, as the model gave them. Every tool that writes files declares them: the
        approval policy asks about protected ones (anvil's configuration, git's files, shell start-up files)
        whatever the mode or the rules (:mod:`anvil.core.tools.protected`)."""
        return []
    def outside_sandbox(self, args: Any) -> str | None:
        """The model's reason when this call asks to run outside the OS sandbox; None otherwise. Such a call
        always asks the person (no rule, mode or hook can allow it), and is refused where nobody can answer."""
        return None

    def phase(self, args: Any) -> str:
        """A short label for front ends ("Reading app.py"), derived from the arguments."""
        return self.name

    def preview(self, args: Any, ctx: ToolContext) -> str | None:
        """The diff this call would make, without making it (for approvals of edits); None if unknown."""
        return None

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...

    def schema(self) -> dict[str, Any]:
        params = self.Args.model_json_schema()
        params.pop("title", None)
        _strip_titles(params)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": params}}


def _strip_titles(node: Any) -> None:
    # pydantic adds a "title" to every property; models do not need them and they cost tokens.
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            for prop in props.values():
                if isinstance(prop, dict):
                    prop.pop("title", None)
        for value in node.values():
            _strip_titles(value)
    elif isinstance(node, list):
        for value in node:
            _strip_titles(value)


@dataclass
class PreparedCall:
    """A tool call after its arguments were parsed; ``error`` is set when it cannot run."""

    tool: Tool | None
    args: Any
    raw_args: dict[str, Any]
    error: str | None = None


class ToolRegistry:
    """The tools offered to the model, by name."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] | None = None
        #: changes with every add and remove, so a view of the registry knows when to look again
        self.version = 0
        for tool in tools or []:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool
        self._schemas = None
        self.version += 1

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)
        self._schemas = None
        self.version += 1

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        # Built once: pydantic's schema generation costs milliseconds, and the loop asks every step.
        if self._schemas is None:
            self._schemas = [tool.schema() for tool in self._tools.values()]
        return self._schemas

    def prepare(self, name: str, arguments: str) -> PreparedCall:
        """Parse and validate a call's raw JSON arguments; problems become messages for the model."""
        tool = self._tools.get(name)
        try:
            raw = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return PreparedCall(tool, None, {}, f"The arguments for {name} are not valid JSON ({exc.msg} at "
                                f"position {exc.pos}). Send a JSON object matching the tool's schema.")
        if not isinstance(raw, dict):
            return PreparedCall(tool, None, {}, f"The arguments for {name} must be a JSON object.")
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return PreparedCall(None, None, raw, f"Unknown tool '{name}'. Available tools: {known}.")
        try:
            args = tool.Args.model_validate(raw)
        except ValidationError as exc:
            return PreparedCall(tool, None, raw, f"Invalid arguments for {name}: {format_validation(exc)}")
        return PreparedCall(tool, args, raw)

    def written_paths(self, name: str, arguments: str) -> list[str]:
        """The paths a call writes, as its tool declares them (``Tool.write_targets``); none for a call that
        cannot run."""
        call = self.prepare(name, arguments)
        return call.tool.write_targets(call.args) if call.tool is not None and call.error is None else []


def format_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        message = "missing required parameter" if err["type"] == "missing" else err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown parameter"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
