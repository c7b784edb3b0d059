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
_QUOTED = re.compile(r"""['"‘“`]([^'"’”`\n]+)['"’”`]""")
_BEFORE_COLON = re.compile(r"(?:^|\s)((?:~|\.{1,2}|[\w.+-]*)?/[^\s:'\"]*|[\w.+-]+\.[\w]+)(?=:)")
_NETWORK_ERRORS = re.compile(
    r"Temporary failure in name resolution|Could not resolve host|Name or service not known|"
    r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|EAI_AGAIN|nodename nor servname|Network is unreachable|"
    r"No address associated with hostname|dial tcp: lookup|failed to lookup address|Failed to resolve|"
    r"NameResolutionError|Could not connect to any|network unreachable", re.I)
_LOCAL_REFUSED = re.compile(r"(?:localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0)[^\n]*Connection refused|"
                            r"Connection refused[^\n]*(?:localhost|127\.0\.0\.1)|ECONNREFUSED (?:127\.0\.0\.1|::1)")


@dataclass(frozen=True)
class Block:
    #: one line for the person and the start of what the model reads
    summary: str
    #: what to do about it
    advice: str

    def text(self) -> str:
        return f"{self.summary}\n{self.advice}"


def find_block(output: str, plan: MountPlan | None, *, cwd: Path, network: bool,
               refused_hosts: list[str] | None = None) -> Block | None:
    """The sandbox's refusal behind a failed command, or None when the output shows none."""
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
        if _LOCAL_REFUSED.search(output):
            return Block("Blocked by the sandbox: a connection to localhost was refused; each sandboxed command has "
                         "its own network namespace.",
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
    shown = str(path) if path is not None else "a read-only place"
    if path is not None and plan is not None:
        if any(path == p or p in path.parents for p in plan.protected):
            return Block(f"Blocked by the sandbox: {shown} is read-only inside the sandbox.",
                         _protected_advice(path))
        if any(path == p or p in path.parents for p in plan.writable + plan.temp_dirs):
            return None  # writable: something else went wrong (a read-only mount of the person's own)
    elif "Read-only file system" not in line and "Errno 30" not in line and "EROFS" not in line:
        return None  # a busy device without a path the sandbox protects is the command's own problem
    where = shown if path is None else f"{shown} is outside the writable paths"
    return Block(f"Blocked by the sandbox: the write to {where} (the project, the temp dir, allowed_dirs and "
                 "[sandbox] writable are writable).",
                 f"If the command needs it, the person can allow it with `[sandbox] writable = [\"{_parent(path)}\"]` "
                 "in .anvil/config.toml, or you can re-run the command with sandbox=false and a reason (the person "
                 "is asked).")


def _protected_advice(path: Path) -> str:
    parts = path.parts
    if ".git" in parts:
        what = "git's config and hooks run code, so only the person changes them"
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
