"""The sandbox on macOS: a sandbox-exec (Seatbelt, SBPL) profile generated from the same mount plan.

Untested on a Mac: it is written to Apple's profile language as Chrome's and Codex's profiles use it, and its
text is unit-tested. It denies by default and allows what commands need: running programs and forking (but not
the programs that hand work to launchd or other apps, which would run it outside the sandbox: ``launchctl``,
``open``, ``osascript``), reading files, writing where the plan says, a short list of system services (user and
group lookups, logging, preferences, certificates, and with the network on, name resolution), and shared
memory and semaphores (Python's multiprocessing). The differences from Linux, all because there are no
namespaces:

* Rules match path names, so protected paths need no placeholders, and a directory is protected from being
  renamed by denying writes to its own name (``literal``).
* There is no private temp dir: ``$TMPDIR`` (per user on macOS) and ``/private/tmp`` are writable, and
  connections to sockets outside the writable roots are refused instead (tmux's and ssh-agent's live there).
* There is no pid namespace: processes a command leaves behind are ended by :mod:`lifetime` instead; the process
  cap is RLIMIT_NPROC (:mod:`limits`).
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
#: programs that ask launchd, LaunchServices or another app to run something: that would run outside the sandbox
LAUNCHERS = ("/bin/launchctl", "/usr/bin/open", "/usr/bin/osascript", "/usr/bin/osacompile",
             "/usr/bin/automator", "/usr/bin/shortcuts", "/usr/sbin/installer", "/usr/bin/at", "/usr/bin/batch",
             "/usr/bin/crontab", "/usr/bin/login", "/usr/bin/su", "/usr/bin/sudo")
#: system services every command may look up: user and group names, logging, preferences, temp dirs, certificates
_SERVICES = ("com.apple.system.opendirectoryd.libinfo", "com.apple.system.opendirectoryd.membership",
             "com.apple.system.logger", "com.apple.logd", "com.apple.diagnosticd",
             "com.apple.system.notification_center",
             "com.apple.cfprefsd.daemon", "com.apple.cfprefsd.agent", "com.apple.bsd.dirhelper",
             "com.apple.trustd.agent", "com.apple.SecurityServer", "com.apple.securityd.xpc", "com.apple.ocspd",
             "com.apple.FontObjectsServer", "com.apple.fonts", "com.apple.PowerManagement.control",
             "com.apple.analyticsd", "com.apple.distributed_notifications@Uv3")
#: and with the network on: name resolution and the network's configuration
_NETWORK_SERVICES = ("com.apple.SystemConfiguration.configd", "com.apple.SystemConfiguration.DNSConfiguration",
                     "com.apple.networkd", "com.apple.dnssd.service", "com.apple.nsurlsessiond")


def quote(path: Path | str) -> str:
    """A path as an SBPL string literal."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(plan: MountPlan, *, network: bool, proxy_port: int | None = None,
                     temp_dirs: Sequence[Path] = ()) -> str:
    """The profile text. ``proxy_port``: with a host list, the only way out is anvil's proxy on localhost."""
    writable = [*plan.writable, *temp_dirs, Path("/private/tmp"), Path("/private/var/tmp")]
    lines = ["(version 1)", "(deny default)",
             ";; programs run and fork; they see and signal only processes of this sandbox",
             "(allow process-exec)", "(allow process-fork)", "(allow process-info* (target same-sandbox))",
             "(allow signal (target same-sandbox))", "(allow mach-priv-task-port (target same-sandbox))",
             ";; but not the programs that hand work to launchd or another app, which would run it outside",
             "(deny process-exec", *(f"  (literal {quote(p)})" for p in LAUNCHERS), ")",
             ";; read anywhere; write only in the project, the temp dirs, allowed_dirs, caches and [sandbox] writable",
             "(allow file-read*)", "(allow file-read-metadata)",
             "(allow file-write*",
             *(f"  (subpath {quote(p)})" for p in dict.fromkeys(writable)),
             *(f"  {device}" for device in _DEVICES), ")",
             '(allow file-ioctl (regex #"^/dev/tty") (regex #"^/dev/ptmx"))', "(allow pseudo-tty)"]
    if plan.protected or plan.pinned:
        lines += [";; anvil's configuration and data, what git reads as configuration: read-only, existing or not",
                  "(deny file-write*",
                  *(f"  (subpath {quote(p)})" for p in plan.protected),
                  *(f"  (literal {quote(p)})" for p in plan.pinned), ")"]
    services = _SERVICES + (_NETWORK_SERVICES if network else ())
    lines += [";; the system services commands need, and none that starts programs (LaunchServices, Apple events)",
              "(allow mach-lookup", *(f"  (global-name {quote(name)})" for name in services), ")",
              "(allow user-preference-read)", "(allow sysctl-read)", "(allow ipc-posix-shm)", "(allow ipc-posix-sem)",
              "(allow iokit-get-properties)",
              ";; sockets of other programs (tmux, ssh-agent, docker) would run code outside the sandbox",
              "(allow network-outbound (remote unix-socket",
              *(f"  (subpath {quote(p)})" for p in dict.fromkeys(writable) if not str(p).startswith("/private/")),
              "))",
              ";; local servers a command starts for itself (tests), on the loopback only",
              '(allow network-bind (local ip "localhost:*"))', '(allow network-inbound (local ip "localhost:*"))']
    if not network:
        lines += [";; no network but the loopback" + (" and anvil's proxy" if proxy_port else ""),
                  '(allow network-outbound (remote ip "localhost:*"))']
    else:
        lines += ["(allow network-outbound (remote ip))", "(allow system-socket)",
                  '(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))']
    return "\n".join(lines) + "\n"


def seatbelt_argv(profile: str, command: Sequence[str]) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile, "--", *command]


def seatbelt_available() -> str | None:
    """None when sandbox-exec can be used here, else why not."""
    if os.uname().sysname != "Darwin":
        return "sandbox-exec is macOS only"
    return None if os.path.exists(SANDBOX_EXEC) else f"{SANDBOX_EXEC} is missing"
