"""How dangerous a shell command is, and why, in words a person reads in an approval dialog.

Decisions:

* Four levels. ``hard_deny`` is refused even with auto-approve: commands with no plausible use
  in a coding session whose mistakes cannot be undone (``rm -rf /``, ``~``, ``$HOME``, the project
  itself or a system directory; ``mkfs``; ``dd`` or a redirection onto a disk device; fork bombs;
  shutdown/reboot; recursive chmod/chown of ``/``; ``kill -9 -1``). ``unattended_deny`` is a
  destructive command whose target only the running shell knows (``rm -rf $x``, ``find "$d" -delete``,
  ``xargs rm -rf``, ``dd of=$(...)``, a delete through a symbolic link): always asked about, and refused
  under auto-approve, where nobody would see it. ``risky`` keeps asking under broad rules (see
  ``command_policy``). Everything else is ``normal``.
* Each finding carries ``triggers``: the words an allow rule must spell out to cover it (``-rf``,
  ``--force``, a path outside the project); ``exact`` ones only when written out word for word
  (``GIT_DIR=x``). A finding with no triggers (a download piped into a shell, a program only known at
  run time, code bash evaluates that the text does not show) cannot be pre-approved by any rule.
* Most risky forms are data: rows in :mod:`anvil.core.policy.risk_rows` (program, subcommand, flags, reason).
  Programs whose risk depends on their paths or on how their words combine have a handler here
  (``_HANDLERS``); a program can have both, and the handler's findings come first. Hidden code and
  environment settings are found by :mod:`.risk_eval`, fork bombs and kills of everything by
  :mod:`.risk_processes`, executed downloads by :mod:`.risk_downloads`.
* Where a path lands (the project, scratch space, home, a system directory) is judged in
  :mod:`anvil.core.policy.risk_paths` (and, through variables and symbolic links, :mod:`.risk_targets`);
  this module finds which words are paths and tracks ``cd``. A write to a path only known at run time is
  risky: a broad rule (``echo *``) does not cover ``> $d/profile``.
* This is a safety net, not a sandbox: code inside ``python -c`` or a script file is not read, and what
  the OS sandbox allows is what is enforced.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from anvil.core.policy.risk_downloads import executed_downloads
from anvil.core.policy.risk_eval import code_strings, hidden_code
from anvil.core.policy.risk_options import option_risks
from anvil.core.policy.risk_paths import Places, strip_glob
from anvil.core.policy.risk_processes import dynamic_pids, fork_bombs, kills_everything
from anvil.core.policy.risk_rows import RiskLevel, has_short, rows_for, split_options
from anvil.core.policy.risk_targets import RunTimeTargets, find_parts
from anvil.core.policy.rules import subcommand_index
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand, is_dynamic
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.shell_words import privileged_inner

_ORDER = {"normal": 0, "risky": 1, "unattended_deny": 2, "hard_deny": 3}


@dataclass(frozen=True)
class Finding:
    level: RiskLevel
    reason: str
    command: int  # index into ParsedCommand.commands
    triggers: tuple[str, ...] = ()  # words a rule must name to cover this; () = no rule can
    exact: bool = False  # the triggers must be written out word for word, not matched by a wildcard
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


_WORLD_WRITABLE = re.compile(r"0?[0-7]?7[0-7][2367]|0?[0-7]?777|[ao]?[+=][rwx]*w[rwx]*")
_SETUID = re.compile(r"[0-7]*[246][0-7]{3}|[ug]*\+[rwx]*s[rwx]*")


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
        self.runtime = RunTimeTargets(parsed, self.places)
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
        for index, reason in executed_downloads(self.cmds):
            self._add("risky", reason, index=index)
        hidden = hidden_code(self.parsed)
        for h in hidden:
            self._add("risky", h.reason, h.triggers, index=h.command, exact=True)
        if any(not h.triggers for h in hidden):
            self._hidden_strings()
        for index in fork_bombs(self.parsed):
            self._add("hard_deny", "is a fork bomb (starts copies of itself until the machine stalls)", index=index)
        unique = dict.fromkeys(self.findings)
        return RiskReport(tuple(unique))

    def _hidden_strings(self) -> None:
        """Code bash may evaluate from a value (``x='a[$(rm -rf ~)]'; (( x ))``) is refused like code in the open
        when it is on the hard-deny list."""
        for source in code_strings(self.parsed):
            parsed = parse_command(source)
            if not parsed.ok:
                continue
            for f in _Checker(parsed, Path(self.places.root), Path(self.places.home), Path(self.cwd or "/")).run(
                    ).findings:
                if f.level == "hard_deny":
                    self._add("hard_deny", f"hides, in a value bash evaluates, a command that {f.reason}", index=0)

    def _add(self, level: RiskLevel, reason: str, triggers: tuple[str, ...] = (),
             index: int | None = None, exact: bool = False, confinable: bool = False) -> None:
        self.findings.append(Finding(level, reason, self.i if index is None else index, triggers, exact,
                                     confinable))

    # --- paths ---------------------------------------------------------------------------------------

    def _targets(self, cmd: SimpleCommand, operands: list[str]) -> list[str]:
        """``{}`` in ``find -exec`` stands for what find visits, starting with its start paths."""
        if cmd.origin != "find -exec" or cmd.parent is None or "{}" not in operands:
            return operands
        starts, filtered = find_parts(self.cmds[cmd.parent].args)
        visited = [f"{s.rstrip('/')}/{{}}" if filtered else s for s in starts]  # filtered: only things below
        return [w for w in operands if w != "{}"] + visited

    def _deletes(self, operands: list[str], cwd: str | None, recursive: bool, blind: str = "") -> None:
        """Deletes of ``operands``; ``blind``: how the command destroys (``deletes recursively``) when a target only
        known at run time must not run unattended (a recursive or wholesale delete)."""
        how = blind or ("deletes recursively" if recursive else "")
        for t in operands:
            path = self.places.resolve(t, cwd)
            if path is None:
                self._unknown_target(t, cwd, how or "deletes", blind=bool(how))
            elif recursive and (what := self.places.catastrophic(strip_glob(path))):
                self._hard(f"deletes {what}")
            elif how and (link := self.runtime.through_link(t, path)):
                self._through_link(t, link, how)
            elif self.places.outside(path):
                self._add("risky", f"deletes outside the project: {t}", (t,))

    def _unknown_target(self, t: str, cwd: str | None, how: str, blind: bool) -> None:
        """A target only the running shell knows. Refused when a value this command gives a variable makes it
        unthinkable; else asked about, and (``blind``) refused under auto-approve."""
        for path in self.runtime.candidates(t, cwd):
            risk = self.places.write_risk(path)
            if what := self.places.catastrophic(strip_glob(path)):
                self._hard(f"{how} {what} (through a variable set to {path})")
                return
            if risk is not None and risk[0] == "hard_deny":
                self._hard(f"{risk[1]} (through a variable set to {path})")
                return
        if blind:
            self._add("unattended_deny", f"{how} a path only known at run time: {t}")
        else:
            self._add("risky", f"{how} a path only known at run time: {t}", (t,))

    def _through_link(self, t: str, link: tuple[str, str | None], how: str) -> None:
        kind, real = link
        if real is not None and (what := self.places.catastrophic(strip_glob(real))):
            self._hard(f"{how} {what} ({kind}: {t})")
        else:
            self._add("unattended_deny", f"{how} {kind}: {t}" + (f" (really {real})" if real else ""))

    def _write(self, target: str, cwd: str | None, shown: str) -> None:
        path = self.places.resolve(target, cwd)
        if path is None:
            self._unknown_write(target, cwd, shown)
            return
        risk = self.places.write_risk(path)
        if risk is not None:
            level, what = risk
            risky = level == "risky"  # no rule covers a hard deny, and no sandbox makes it harmless
            self._add(level, f"{what}: {shown}", (target,) if risky else (), confinable=risky)

    def _unknown_write(self, target: str, cwd: str | None, shown: str) -> None:
        for path in self.runtime.candidates(target, cwd):
            risk = self.places.write_risk(path)
            if risk is not None and risk[0] == "hard_deny":
                self._add("hard_deny", f"{risk[1]} (through a variable set to {path}): {shown}")
                return
        self._add("risky", f"writes to a path only known at run time: {shown}", (target,), confinable=True)

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
        for reason, triggers in option_risks(call.words, call.sub_at):
            self._risky(reason, *triggers)
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
        wholesale = "destroys the contents of" if name == "shred" else "deletes recursively" if rec else ""
        if "xargs" in call.cmd.wrappers:
            if wholesale:
                self._add("unattended_deny", f"{wholesale} the paths it reads from its input: {_short(self.text)}")
            else:
                self._risky("deletes the paths it reads from input", call.program)
        targets = self._targets(call.cmd, call.operands)
        from_find = call.cmd.origin == "find -exec" and any("{}" in t for t in targets)
        self._deletes(targets, call.cwd, bool(rec), wholesale or ("deletes" if from_find else ""))

    def _find(self, call: _Call) -> None:
        if "-delete" in call.args:
            self._risky("deletes what find matches", "-delete")
            starts, filtered = find_parts(call.args)
            self._deletes(starts, call.cwd, not filtered, "deletes what it finds under")

    def _copies(self, call: _Call) -> None:
        name, args, operands, cwd = call.name, call.args, call.operands, call.cwd
        target = next((args[k + 1] for k, a in enumerate(args[:-1]) if a in ("-t", "--target-directory")),
                      None)
        sources, dest = (operands, target) if target else (operands[:-1], operands[-1] if operands else None)
        if name == "mv":
            self._moves(sources, cwd)
        if name == "ln" and any(has_short(o, "s") or o == "--symbolic" for o in call.opts) and dest is not None:
            for s in sources[:1]:
                self.runtime.made_link(self.places.resolve(dest, cwd), s)
        if name in ("rsync", "scp") and any(re.match(r"[\w.@-]+:", w) for w in operands):
            self._risky("copies files to or from another machine", name)
        elif dest is not None:
            self._write(dest, cwd, dest)
        if name == "rsync" and (deletes := [o for o in call.opts if o.startswith("--delete")]):
            self._risky("deletes files at the destination", *deletes)
            if dest is not None and self.places.resolve(dest, cwd) is None:
                self._unknown_target(dest, cwd, "deletes files in", blind=True)

    def _moves(self, sources: list[str], cwd: str | None) -> None:
        for s in sources:
            path = self.places.resolve(s, cwd)
            if what := path and self.places.catastrophic(path):
                self._hard(f"moves away {what}")
            elif path and self.places.outside(path):
                self._add("risky", f"moves files from outside the project: {s}", (s,))

    def _writes_operands(self, call: _Call) -> None:
        for t in call.operands:
            if call.name == "truncate" and t[:1].isdigit():  # truncate -s 0 FILE
                continue
            if call.name == "truncate" and self.places.resolve(t, call.cwd) is None:
                self._unknown_target(t, call.cwd, "truncates", blind=True)
            else:
                self._write(t, call.cwd, t)

    def _dd(self, call: _Call) -> None:
        for a in call.args:
            if a.startswith("of=") and self.places.resolve(a[3:], call.cwd) is None:
                self._unknown_target(a[3:], call.cwd, "writes raw data to", blind=True)
            elif a.startswith("of="):
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
            if path is None and rec:
                self._unknown_target(t, call.cwd, f"changes {what} recursively of", blind=True)
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
        if kills_everything(call.words, call.name):
            self._hard("kills every process you own")
        elif call.name == "kill" and (pids := dynamic_pids(call.words)):
            self._risky("kills processes chosen at run time", *pids)

    def _source(self, call: _Call) -> None:
        if call.operands:  # code this shell runs and can set anything for the commands after it
            self._risky("runs the shell code in a file", call.operands[0])

    def _ssh(self, call: _Call) -> None:
        if len(call.operands) >= 2:
            self._risky("runs commands on another machine", call.program)

    def _crontab(self, call: _Call) -> None:
        if "-r" in call.opts or call.operands:
            self._risky("replaces or removes your cron jobs", call.program)


_Handler = Callable[[_Checker, _Call], None]
_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred"), _Checker._remove),
    "find": _Checker._find,
    **dict.fromkeys(("mv", "cp", "install", "ln", "rsync", "scp"), _Checker._copies),
    **dict.fromkeys(("tee", "truncate", "touch"), _Checker._writes_operands),
    "dd": _Checker._dd,
    **dict.fromkeys(("chmod", "chown", "chgrp"), _Checker._permissions),
    **dict.fromkeys(("kill", "pkill", "killall", "killall5"), _Checker._kill),
    "ssh": _Checker._ssh,
    **dict.fromkeys(("source", "."), _Checker._source),
    "crontab": _Checker._crontab,
}
