"""The sandbox on macOS: a sandbox-exec (Seatbelt, SBPL) profile generated from the same mount plan.

Untested on a Mac: it is written to Apple's profile language as Codex and Chrome use it, and its text is
unit-tested. The differences from Linux, all because there are no namespaces:

* Rules match path names, so protected paths need no placeholders, and a directory is protected from being
  renamed by denying writes to its own name (``literal``).
* There is no private temp dir: ``$TMPDIR`` (per user on macOS) and ``/private/tmp`` are writable, and
  connections to sockets outside the writable roots are refused instead (tmux's and ssh-agent's live there).
* There is no pid namespace: processes a command leaves behind are ended by :mod:`lifetime` instead.
* The loopback is shared: local servers (a database, another anvil session's commands) stay reachable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from anvil.core.sandbox.places import MountPlan

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
_DEVICES = ('(literal "/dev/null")', '(literal "/dev/zero")', '(literal "/dev/dtracehelper")',
            '(regex #"^/dev/tty")', '(regex #"^/dev/fd/")', '(regex #"^/dev/ptmx")')


def quote(path: Path | str) -> str:
    """A path as an SBPL string literal."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(plan: MountPlan, *, network: bool, proxy_port: int | None = None,
                     temp_dirs: Sequence[Path] = ()) -> str:
    """The profile text. ``proxy_port``: with a host list, the only way out is anvil's proxy on localhost."""
    writable = [*plan.writable, *temp_dirs, Path("/private/tmp"), Path("/private/var/tmp")]
    lines = ["(version 1)", "(allow default)",
             ";; write only in the project, the temp dirs, allowed_dirs, caches and [sandbox] writable",
             "(deny file-write*)",
             "(allow file-write*",
             *(f"  (subpath {quote(p)})" for p in dict.fromkeys(writable)),
             *(f"  {device}" for device in _DEVICES), ")"]
    if plan.protected or plan.pinned:
        lines += [";; anvil's configuration and data, git's config and hooks: read-only, existing or not",
                  "(deny file-write*",
                  *(f"  (subpath {quote(p)})" for p in plan.protected),
                  *(f"  (literal {quote(p)})" for p in plan.pinned), ")"]
    lines += [";; sockets of other programs (tmux, ssh-agent, docker) would run code outside the sandbox",
              "(deny network-outbound (remote unix-socket))",
              "(allow network-outbound (remote unix-socket",
              *(f"  (subpath {quote(p)})" for p in dict.fromkeys(writable) if not str(p).startswith("/private/")),
              "))",
              ";; no starting programs through launchd or Apple events (they would run outside the sandbox)",
              '(deny mach-lookup (global-name "com.apple.coreservices.launchservicesd")',
              '  (global-name "com.apple.coreservices.appleevents"))']
    if not network:
        lines += [";; no network but the loopback" + (" and anvil's proxy" if proxy_port else ""),
                  "(deny network-outbound (remote ip))",
                  '(allow network-outbound (remote ip "localhost:*"))']
    else:
        lines += ['(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))']
    return "\n".join(lines) + "\n"


def seatbelt_argv(profile: str, command: Sequence[str]) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile, "--", *command]


def seatbelt_available() -> str | None:
    """None when sandbox-exec can be used here, else why not."""
    if os.uname().sysname != "Darwin":
        return "sandbox-exec is macOS only"
    return None if os.path.exists(SANDBOX_EXEC) else f"{SANDBOX_EXEC} is missing"
