"""What the sandbox refused, read from a command's output, so the model and the person see the real cause.

A command the sandbox stopped fails with an ordinary-looking error: ``Read-only file system`` for a write
outside the writable paths (or ``Device or resource busy`` for a protected file replaced by a rename, as git
does), a name-resolution error with the network off. :func:`find_block` recognises these and says, in one
line, what was blocked and how the person can allow it; the command's own output stays as it was.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from anvil.core.sandbox.places import MountPlan

_WRITE_ERRORS = re.compile(r"Read-only file system|Device or resource busy|Errno 30\b|EROFS|EBUSY")
_READ_ONLY = re.compile(r"Read-only file system|Errno 30\b|EROFS")
_QUOTED = re.compile(r"""['"‘“`]([^'"’”`\n]+)['"’”`]""")
_BEFORE_COLON = re.compile(r"(?:^|\s)((?:~|\.{1,2}|[\w.+-]*)?/[^\s:'\"]*|[\w.+-]+\.[\w]+)(?=:)")
_NETWORK_ERRORS = re.compile(
    r"Temporary failure in name resolution|Could not resolve host|Name or service not known|"
    r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|EAI_AGAIN|nodename nor servname|Network is unreachable|"
    r"No address associated with hostname|dial tcp: lookup|failed to lookup address|Failed to resolve|"
    r"NameResolutionError|Could not connect to any|network unreachable", re.I)
_FORK_FAILED = re.compile(r"fork: (retry: )?Resource temporarily unavailable|Cannot fork|can't fork|"
                          r"BlockingIOError: \[Errno 11\]|pthread_create failed|EAGAIN.*(fork|spawn|clone)", re.I)
#: without network the only addresses left are the sandbox's own loopback: a refusal is a connection to it
_REFUSED = re.compile(r"Connection refused|ECONNREFUSED|actively refused", re.I)


@dataclass(frozen=True)
class Block:
    #: one line for the person and the start of what the model reads
    summary: str
    #: what to do about it
    advice: str

    def text(self) -> str:
        return f"{self.summary}\n{self.advice}"


def find_block(output: str, plan: MountPlan | None, *, cwd: Path, network: bool,
               refused_hosts: list[str] | None = None, process_cap: int | None = None) -> Block | None:
    """The sandbox's refusal behind a failed command, or None when the output shows none. ``process_cap``: the
    processes a command may have at once, when a cap is in place."""
    if process_cap and _FORK_FAILED.search(output):
        return Block(f"Blocked by the sandbox: the command tried to have more than {process_cap} processes (or "
                     "threads) at once, the sandbox's cap.",
                     "If it really needs that many, the person can raise `[sandbox] max_processes` in "
                     ".anvil/config.toml; a command that starts copies of itself without end never will.")
    if refused_hosts:
        hosts = ", ".join(dict.fromkeys(refused_hosts))
        return Block(f"Blocked by the sandbox: connecting to {hosts}, which is not in the allowed hosts.",
                     "The person can add it to `[sandbox] network = [...]` in .anvil/config.toml, or you can "
                     "re-run the command with sandbox=false and a reason (the person is asked).")
    for line in output.splitlines():
        if _WRITE_ERRORS.search(line):
            block = _write_block(line, plan, cwd)
            if block is not None:
                return block
    if not network:
        if _REFUSED.search(output):
            return Block("Blocked by the sandbox: a connection was refused, and a sandboxed command reaches only its "
                         "own loopback.",
                         "A server started by another command (background=true included) cannot be reached from "
                         "this one: start the server and its client in the same command (`server & sleep 1; "
                         "curl localhost:8000; kill %1`), or ask the person for `[sandbox] network = true`.")
        if _NETWORK_ERRORS.search(output):
            return Block("Blocked by the sandbox: commands have no network access.",
                         "The person can allow it with `[sandbox] network = true` (or a list of hosts) in "
                         ".anvil/config.toml, or you can re-run the command with sandbox=false and a reason (the "
                         "person is asked).")
    return None


def _write_block(line: str, plan: MountPlan | None, cwd: Path) -> Block | None:
    path = _path_in(line, cwd)
    if path is not None and plan is not None and _under(path, plan.protected):
        return Block(f"Blocked by the sandbox: {path} is read-only inside the sandbox.",
                     _protected_advice(path, path in plan.scripts))
    if not _READ_ONLY.search(line):
        # `sed -i` and editors write a temp file and rename it over the original: the rename of a protected
        # file fails as busy, and the message names the temp file beside it
        near = [p for p in plan.protected if path is not None and p.parent == path.parent] if plan else []
        if near:
            names = ", ".join(str(p) for p in near[:3])
            return Block(f"Blocked by the sandbox: a read-only file could not be replaced ({names}).",
                         _protected_advice(near[0], near[0] in plan.scripts if plan else False))
        return None  # a busy device or file the sandbox does not protect: the command's own problem
    if path is not None and plan is not None and _under(path, plan.writable + plan.temp_dirs):
        return None  # writable here: a read-only mount of the person's own
    if path is not None and path.parts[1:2] in (("proc",), ("sys",)):
        return Block(f"Blocked by the sandbox: {path} is one of the kernel's settings, read-only inside the sandbox.",
                     "This is the sandbox, not the command's own error; no setting makes it writable. If it is "
                     "really needed, re-run the command with sandbox=false and a reason (the person is asked).")
    where = "a read-only place" if path is None else f"{path} is outside the writable paths"
    return Block(f"Blocked by the sandbox: the write to {where} (the project, the temp dir, allowed_dirs and "
                 "[sandbox] writable are writable).",
                 f"If the command needs it, the person can allow it with `[sandbox] writable = [\"{_parent(path)}\"]` "
                 "in .anvil/config.toml, or you can re-run the command with sandbox=false and a reason (the person "
                 "is asked).")


def _under(path: Path, places: list[Path]) -> bool:
    return any(path == p or p in path.parents for p in places)


def _protected_advice(path: Path, script: bool = False) -> str:
    parts = path.parts
    if script:
        what = ("anvil's hooks or MCP servers run this file outside the sandbox, so only the person changes it "
                "(the file tools ask)")
    elif ".git" in parts:
        what = ("git reads its configuration, hooks and pointers to other repositories there and runs what they "
                "name, so only the person changes them; commits, branches, stashes and fetches work as usual")
    elif ".anvil" in parts or "anvil" in parts:
        what = "anvil's configuration and data decide what runs without asking, so only the person changes them"
    else:
        what = "files a shell, git or ssh act on are changed only by the person"
    return (f"This is the sandbox, not the command's own error: {what}. Tell the person what you wanted to change, "
            "or re-run the command with sandbox=false and a reason (the person is asked).")


def _path_in(line: str, cwd: Path) -> Path | None:
    candidates = [m.group(1) for m in _QUOTED.finditer(line)] + [m.group(1) for m in _BEFORE_COLON.finditer(line)]
    for word in candidates:
        word = word.strip()
        if "/" not in word and "." not in word:
            continue
        if word.startswith("~"):
            word = str(Path(word).expanduser())
        path = Path(word) if word.startswith("/") else cwd / word
        return Path(_normal(path))
    return None


def _normal(path: Path) -> str:
    return posixpath.normpath(str(path))


def _parent(path: Path | None) -> str:
    if path is None:
        return "/path/to/dir"
    return str(path.parent if path.suffix or not path.is_dir() else path)
