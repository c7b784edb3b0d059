"""How dangerous a shell command is, and why, in words a person reads in an approval dialog.

Decisions:

* Three levels. ``hard_deny`` is refused even with auto-approve: commands with no plausible use
  in a coding session whose mistakes cannot be undone (``rm -rf /``, ``~``, ``$HOME``, the project
  itself or a system directory; ``mkfs``; ``dd`` or a redirection onto a disk device; fork bombs;
  shutdown/reboot; recursive chmod/chown of ``/``; ``kill -9 -1``). ``risky`` keeps asking under
  broad rules (see ``command_policy``). Everything else is ``normal``.
* Each finding carries ``triggers``: the words an allow rule must spell out to cover it (``-rf``,
  ``--force``, a path outside the project). A finding with no triggers (a download piped into a
  shell, a program only known at run time) cannot be pre-approved by any rule.
* Most risky forms are data: rows in :mod:`anvil.core.policy.risk_rows` (program, subcommand, flags, reason).
  Programs whose risk depends on their paths or on how their words combine have a handler here
  (``_HANDLERS``); a program can have both, and the handler's findings come first.
* Where a path lands (the project, scratch space, home, a system directory) is judged in
  :mod:`anvil.core.policy.risk_paths`; this module finds which words are paths and tracks ``cd``.
  A delete whose target is only known at run time is risky; a plain write to one is not (that is
  most build output, and flagging it would teach people to click through).
* This is a safety net for honest mistakes, not a sandbox: code inside ``python -c`` or a script
  file is not read.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from anvil.core.policy.risk_paths import Places, strip_glob
from anvil.core.policy.risk_rows import RiskLevel, has_short, rows_for, split_options
from anvil.core.policy.rules import subcommand_index
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand, is_dynamic
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.shell_words import SHELLS, privileged_inner

_ORDER = {"normal": 0, "risky": 1, "hard_deny": 2}


@dataclass(frozen=True)
class Finding:
    level: RiskLevel
    reason: str
    command: int  # index into ParsedCommand.commands
    triggers: tuple[str, ...] = ()  # words a rule must name to cover this; () = no rule can
    #: risky only because of where it writes: the OS sandbox enforces that boundary when it is on
    confinable: bool = False


@dataclass(frozen=True)
class RiskReport:
    findings: tuple[Finding, ...] = ()

    @property
    def level(self) -> RiskLevel:
        return max((f.level for f in self.findings), key=_ORDER.__getitem__, default="normal")

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.reason for f in self.findings))

    def for_command(self, index: int) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.command == index)


def classify(command: str | ParsedCommand, root: Path, home: Path, cwd: Path | None = None) -> RiskReport:
    parsed = parse_command(command) if isinstance(command, str) else command
    return _Checker(parsed, root, home, cwd or root).run()


_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "aria2c"})
_INTERPRETER = re.compile(r"(python[0-9.]*|pypy3?|node|nodejs|deno|bun|ruby|perl|php)")
_GIT_RUNS = re.compile("|".join((  # git config keys whose value is a command git will run
    r"core\.(pager|sshcommand|fsmonitor|editor|hookspath|askpass)", r"sequence\.editor", r"alias\.",
    r"diff\.external", r".*\.textconv", r"credential\.helper", r"gpg\.program", r".*command")), re.I)
_FORK_BOMB = re.compile(r"([\w:.]+)\(\)\{\1\|\1&")
_WORLD_WRITABLE = re.compile(r"0?[0-7]?7[0-7][2367]|0?[0-7]?777|[ao]?[+=][rwx]*w[rwx]*")
_SETUID = re.compile(r"[0-7]*[246][0-7]{3}|[ug]*\+[rwx]*s[rwx]*")


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_FIND_TESTS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
                         "-iregex", "-type", "-xtype", "-newer", "-mtime", "-mmin", "-atime", "-amin",
                         "-ctime", "-cmin",
                         "-size", "-user", "-group", "-uid", "-gid", "-perm", "-empty", "-links", "-inum",
                         "-samefile", "-lname", "-ilname", "-prune", "-used", "-readable", "-writable"})


def _find_parts(args: tuple[str, ...]) -> tuple[list[str], bool]:
    """find's start paths, and whether a test (``-name``, ``-type``...) filters what it visits.
    Unfiltered, ``find X -delete`` is ``rm -rf X``."""
    k = next((k for k, a in enumerate(args) if a[:1] in "-(!" and a not in ("-L", "-P", "-H")), len(args))
    starts = [a for a in args[:k] if a not in ("-L", "-P", "-H")] or ["."]
    expression, in_exec = [], False
    for a in args[k:]:  # the words of -exec ... ; are not find's own tests
        in_exec = (in_exec and a not in (";", "+")) or a in ("-exec", "-execdir", "-ok", "-okdir")
        if not in_exec:
            expression.append(a)
    return starts, any(a in _FIND_TESTS for a in expression)


def _executes_input(words: tuple[str, ...]) -> bool:
    """A shell or interpreter that runs whatever it reads on stdin (``sh``, ``sudo bash -s``)."""
    inner = privileged_inner(words)
    words = inner[1] if inner else words
    if not words:
        return False
    name = posixpath.basename(words[0])
    if name not in SHELLS and not _INTERPRETER.fullmatch(name):
        return False
    opts, operands = split_options(words[1:])
    if any(o in ("-e", "-m", "--eval", "-p", "-r") or (name in SHELLS and "c" in o[1:] and o[1] != "-")
           for o in opts):
        return False
    return not operands or operands[0] == "-" or "-s" in opts


@dataclass(frozen=True)
class _Call:
    """One simple command as the checks read it: the program, its options and operands, its subcommand."""

    cmd: SimpleCommand
    words: tuple[str, ...]
    cwd: str | None
    name: str
    opts: list[str]
    operands: list[str]
    sub_at: int | None

    @classmethod
    def of(cls, cmd: SimpleCommand, words: tuple[str, ...], cwd: str | None) -> _Call:
        opts, operands = split_options(words[1:])
        return cls(cmd, words, cwd, posixpath.basename(words[0]), opts, operands, subcommand_index(words))

    @property
    def program(self) -> str:
        return self.words[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]

    @property
    def sub(self) -> str:
        return self.words[self.sub_at] if self.sub_at is not None else ""

    @property
    def after(self) -> tuple[str, ...]:
        """The words after the subcommand."""
        return self.words[self.sub_at + 1:] if self.sub_at is not None else ()


class _Checker:
    def __init__(self, parsed: ParsedCommand, root: Path, home: Path, cwd: Path) -> None:
        self.parsed, self.cmds = parsed, parsed.commands
        self.places = Places.of(root, home)
        self.cwd: str | None = posixpath.normpath(str(cwd))
        self.findings: list[Finding] = []
        self.i, self.text = 0, ""

    def run(self) -> RiskReport:
        for i, cmd in enumerate(self.cmds):
            self.i, self.text, cwd = i, cmd.text, self.cwd
            self._command(cmd, cmd.words, cwd)
            for r in cmd.redirects:
                if r.writes:
                    self._write(r.target, cwd, f"{r.op} {r.target}")
            if cmd.name in ("cd", "pushd", "popd") and cmd.origin == "command":
                target = cmd.args[0] if cmd.args else "~"
                self.cwd = None if cmd.name == "popd" or target == "-" else self.places.resolve(target, cwd)
        self._downloads()
        compact = re.sub(r"\s+", "", self.parsed.source)
        if _FORK_BOMB.search(compact) or "{:|:&}" in compact:
            self._add("hard_deny", "is a fork bomb (starts processes until the machine stalls)", index=0)
        unique = dict.fromkeys(self.findings)
        return RiskReport(tuple(unique))

    def _add(self, level: RiskLevel, reason: str, triggers: tuple[str, ...] = (),
             index: int | None = None, confinable: bool = False) -> None:
        self.findings.append(Finding(level, reason, self.i if index is None else index, triggers, confinable))

    # --- paths ---------------------------------------------------------------------------------------

    def _targets(self, cmd: SimpleCommand, operands: list[str]) -> list[str]:
        """``{}`` in ``find -exec`` stands for what find visits, starting with its start paths."""
        if cmd.origin != "find -exec" or cmd.parent is None or "{}" not in operands:
            return operands
        starts, filtered = _find_parts(self.cmds[cmd.parent].args)
        visited = [f"{s.rstrip('/')}/{{}}" if filtered else s for s in starts]  # filtered: only things below
        return [w for w in operands if w != "{}"] + visited

    def _deletes(self, operands: list[str], cwd: str | None, recursive: bool) -> None:
        for t in operands:
            path = self.places.resolve(t, cwd)
            if path is None:
                self._add("risky", f"deletes a path only known at run time: {t}", (t,))
            elif recursive and (what := self.places.catastrophic(strip_glob(path))):
                self._hard(f"deletes {what}")
            elif self.places.outside(path):
                self._add("risky", f"deletes outside the project: {t}", (t,))

    def _write(self, target: str, cwd: str | None, shown: str) -> None:
        risk = self.places.write_risk(self.places.resolve(target, cwd))
        if risk is not None:
            level, what = risk
            risky = level == "risky"  # no rule covers a hard deny, and no sandbox makes it harmless
            self._add(level, f"{what}: {shown}", (target,) if risky else (), confinable=risky)

    # --- commands ------------------------------------------------------------------------------------

    def _risky(self, what: str, *triggers: str) -> None:
        """A risky finding about the current command, shown as "<what>: <the command>"."""
        self._add("risky", f"{what}: {_short(self.text)}", triggers)

    def _hard(self, what: str) -> None:
        self._add("hard_deny", f"{what}: {_short(self.text)}")

    def _command(self, cmd: SimpleCommand, words: tuple[str, ...], cwd: str | None) -> None:
        if not words:
            return
        program, args = words[0], words[1:]
        if is_dynamic(program) or re.search(r"[*?]|\{.*,.*\}", program):  # $x, $(...), globs, {a,b}
            self._risky("runs a command whose name is only known at run time")
            return
        if any(e.startswith(("LD_PRELOAD=", "LD_LIBRARY_PATH=", "DYLD_")) for e in cmd.env):
            self._risky("loads other libraries into the program")
        inner = privileged_inner(words)
        name = posixpath.basename(program)
        if inner is not None or name == "su":
            shell = (inner is not None and not inner[1]) or (name == "su" and "-c" not in args)
            self._risky("opens a root shell" if shell else "runs as root", program)
            if inner is not None:
                self._command(cmd, inner[1], cwd)
            return
        call = _Call.of(cmd, words, cwd)
        handler = _HANDLERS.get(call.name)
        if handler is not None:
            handler(self, call)
        self._rows(call)

    def _rows(self, call: _Call) -> None:
        """The risky forms the table knows for this program (:mod:`anvil.core.policy.risk_rows`)."""
        for row in rows_for(call.name):
            triggers = row.match(call.program, call.args, call.sub, call.after)
            if triggers is None:
                continue
            if row.level == "hard_deny":
                self._hard(row.reason)
            else:
                self._risky(row.reason, *triggers)
            if row.final:
                break

    # --- handlers: programs whose risk depends on their paths or on how their words combine -----------

    def _remove(self, call: _Call) -> None:
        name, opts = call.name, call.opts
        rec = [o for o in opts if o == "--recursive" or (name == "rm" and has_short(o, "rR"))]
        force = [o for o in opts if o == "--force" or (name == "rm" and has_short(o, "f"))]
        if "--no-preserve-root" in opts:
            self._hard("deletes with --no-preserve-root")
        if rec or force:
            how = " and ".join(w for w, on in (("recursively", rec), ("forcibly", force)) if on)
            self._risky(f"deletes {how}", *dict.fromkeys(rec + force))
        if name == "shred":
            self._risky("destroys file contents", call.program)
        if "xargs" in call.cmd.wrappers:
            self._risky("deletes the paths it reads from input", call.program)
        self._deletes(self._targets(call.cmd, call.operands), call.cwd, bool(rec))

    def _find(self, call: _Call) -> None:
        if "-delete" in call.args:
            self._risky("deletes what find matches", "-delete")
            starts, filtered = _find_parts(call.args)
            self._deletes(starts, call.cwd, not filtered)

    def _copies(self, call: _Call) -> None:
        name, args, operands, cwd = call.name, call.args, call.operands, call.cwd
        target = next((args[k + 1] for k, a in enumerate(args[:-1]) if a in ("-t", "--target-directory")),
                      None)
        sources, dest = (operands, target) if target else (operands[:-1], operands[-1] if operands else None)
        for s in sources if name == "mv" else ():
            path = self.places.resolve(s, cwd)
            if what := path and self.places.catastrophic(path):
                self._hard(f"moves away {what}")
            elif path and self.places.outside(path):
                self._add("risky", f"moves files from outside the project: {s}", (s,))
        if name in ("rsync", "scp") and any(re.match(r"[\w.@-]+:", w) for w in operands):
            self._risky("copies files to or from another machine", name)
        elif dest is not None:
            self._write(dest, cwd, dest)
        if name == "rsync" and (deletes := [o for o in call.opts if o.startswith("--delete")]):
            self._risky("deletes files at the destination", *deletes)

    def _writes_operands(self, call: _Call) -> None:
        for t in call.operands:
            if not (call.name == "truncate" and t[:1].isdigit()):  # truncate -s 0 FILE
                self._write(t, call.cwd, t)

    def _dd(self, call: _Call) -> None:
        for a in call.args:
            if a.startswith("of="):
                self._write(a[3:], call.cwd, a)

    def _permissions(self, call: _Call) -> None:
        name, opts, operands = call.name, call.opts, call.operands
        rec = [o for o in opts if o == "--recursive" or has_short(o, "R")]
        mode = operands[0] if operands and not any(o.startswith("--reference") for o in opts) else ""
        what = "permissions" if name == "chmod" else "ownership"
        if rec:
            self._risky(f"changes {what} recursively", *rec)
        if name == "chmod":
            self._mode(mode)
        for t in operands[1:] if mode else operands:
            path = self.places.resolve(t, call.cwd)
            catastrophic = path and self.places.catastrophic(strip_glob(path))
            if rec and catastrophic and catastrophic != "the whole project":
                self._hard(f"changes {what} of {catastrophic} recursively")
            elif path and self.places.outside(path):
                self._add("risky", f"changes {what} outside the project: {t}", (t,))

    def _mode(self, mode: str) -> None:
        if _WORLD_WRITABLE.fullmatch(mode):
            self._risky("makes files writable by everyone", mode)
        if _SETUID.fullmatch(mode):
            self._risky("sets the setuid/setgid bit", mode)

    def _kill(self, call: _Call) -> None:
        # the first operand or option is the signal (kill -9 -1); -1 after it means every process
        if "-1" in (call.operands + call.opts)[1 if call.opts else 0:]:
            self._hard("kills every process you own")

    def _ssh(self, call: _Call) -> None:
        if len(call.operands) >= 2:
            self._risky("runs commands on another machine", call.program)

    def _crontab(self, call: _Call) -> None:
        if "-r" in call.opts or call.operands:
            self._risky("replaces or removes your cron jobs", call.program)

    def _git(self, call: _Call) -> None:
        """What git's table rows cannot say: ``-c key=command`` before the subcommand, and ``git config``
        changing the configuration of every repository."""
        head = call.words[:call.sub_at] if call.sub_at is not None else call.words
        if config := [v for k, v in pairwise(head) if k == "-c" and _GIT_RUNS.match(v)]:
            self._risky("sets git configuration that runs commands", *config)
        if call.sub == "config":
            opts, operands = split_options(call.after)
            flags = [o for o in opts if o in ("--global", "--system")]
            if flags and (len(operands) >= 2 or any(o.startswith(("--unset", "--add", "--replace", "--remove"))
                                                    for o in opts)):
                self._risky("changes git configuration outside the project", *flags)

    def _downloads(self) -> None:
        """Downloaded bytes that end up executed: ``curl | sh``, ``bash <(curl)``, ``eval "$(curl)"``."""
        for d in self.cmds:
            if d.name not in _DOWNLOADERS:
                continue
            for j, c in enumerate(self.cmds):
                if c.pipeline == d.pipeline and c.stage > d.stage and _executes_input(c.words):
                    shown = f"{_short(d.text, 40)} | {_short(c.text, 25)}"
                    self._add("risky", f"pipes a download into a shell: {shown}", index=j)
            parent = self.cmds[d.parent] if d.parent is not None else None
            if parent is not None and d.origin in ("substitution", "process substitution"):
                inner = privileged_inner(parent.words)
                words = inner[1] if inner else parent.words
                name = posixpath.basename(words[0]) if words else ""
                if name in SHELLS or _INTERPRETER.fullmatch(name) or name in ("eval", "source", ".") or (
                        is_dynamic(parent.program)):
                    self._add("risky", f"runs downloaded code: {_short(parent.text)}", index=d.parent)


_Handler = Callable[[_Checker, _Call], None]
_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred"), _Checker._remove),
    "find": _Checker._find,
    **dict.fromkeys(("mv", "cp", "install", "ln", "rsync", "scp"), _Checker._copies),
    **dict.fromkeys(("tee", "truncate", "touch"), _Checker._writes_operands),
    "dd": _Checker._dd,
    **dict.fromkeys(("chmod", "chown", "chgrp"), _Checker._permissions),
    "kill": _Checker._kill,
    "ssh": _Checker._ssh,
    "crontab": _Checker._crontab,
    "git": _Checker._git,
}
