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
from collections.abc import Callable, Sequence
from pathlib import Path

from anvil.core.policy.risk_call import Call, Finding, RiskReport, short
from anvil.core.policy.risk_downloads import executed_downloads
from anvil.core.policy.risk_eval import code_strings, hidden_code
from anvil.core.policy.risk_feeders import fed_paths, selects_every_process
from anvil.core.policy.risk_options import git_elsewhere, option_risks
from anvil.core.policy.risk_paths import Places, WriteRisk, strip_glob
from anvil.core.policy.risk_processes import dynamic_pids, fork_bombs, kills_everything
from anvil.core.policy.risk_rows import RiskLevel, has_short, rows_for
from anvil.core.policy.risk_targets import RunTimeTargets, find_parts
from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand, is_dynamic
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.shell_words import privileged_inner

__all__ = ["Finding", "RiskReport", "classify"]
_DEVICE = re.compile(r"/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/|loop\d)")


def classify(command: str | ParsedCommand, root: Path, home: Path, cwd: Path | None = None, *,
             config_dirs: Sequence[Path] = (), scripts: Sequence[Path] = ()) -> RiskReport:
    """``config_dirs``: anvil's user configuration directories; ``scripts``: files anvil's hooks and MCP servers
    run outside the sandbox. Writes to either are protected, like ``.anvil/config.toml`` and ``.git``."""
    parsed = parse_command(command) if isinstance(command, str) else command
    return _Checker(parsed, Places.of(root, home, config_dirs, scripts), cwd or root).run()


_WORLD_WRITABLE = re.compile(r"0?[0-7]?7[0-7][2367]|0?[0-7]?777|[ao]?[+=][rwx]*w[rwx]*")
_SETUID = re.compile(r"[0-7]*[246][0-7]{3}|[ug]*\+[rwx]*s[rwx]*")


class _Checker:
    def __init__(self, parsed: ParsedCommand, places: Places, cwd: Path) -> None:
        self.parsed, self.cmds = parsed, parsed.commands
        self.places = places
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
            for f in _Checker(parsed, self.places, Path(self.cwd or "/")).run().findings:
                if f.level == "hard_deny":
                    self._add("hard_deny", f"hides, in a value bash evaluates, a command that {f.reason}", index=0)

    def _add(self, level: RiskLevel, reason: str, triggers: tuple[str, ...] = (),
             index: int | None = None, exact: bool = False, confinable: bool = False, protected: bool = False) -> None:
        self.findings.append(Finding(level, reason, self.i if index is None else index, triggers, exact,
                                     confinable, protected))

    # --- paths ---------------------------------------------------------------------------------------

    def _targets(self, cmd: SimpleCommand, operands: list[str]) -> tuple[list[str], bool]:
        """``{}`` in ``find -exec`` stands for what find visits, starting with its start paths; with ``xargs``, the
        paths the pipeline feeds it. Also: whether that is everything under those paths (nothing narrows it)."""
        if "xargs" in cmd.wrappers and (fed := fed_paths(self.cmds, self.i)) is not None:
            paths, everything, narrowed_starts = fed
            self._wide_delete(narrowed_starts, self.cwd, "deletes, from its input, files found under")
            return operands + paths, everything
        if cmd.origin != "find -exec" or cmd.parent is None or "{}" not in operands:
            return operands, False
        starts, narrowed = find_parts(self.cmds[cmd.parent].args)
        if narrowed:
            self._wide_delete(starts, self.cwd, "deletes files it finds under")
        visited = [f"{s.rstrip('/')}/{{}}" if narrowed else s for s in starts]  # narrowed: only things below
        return [w for w in operands if w != "{}"] + visited, not narrowed

    def _wide_delete(self, starts: list[str], cwd: str | None, how: str) -> None:
        """A filtered delete across a place whose loss would be unthinkable (home, ``/``, a system directory):
        asked about, and refused under auto-approve. The project itself is where such deletes belong."""
        for start in starts:
            path = self.places.resolve(start, cwd)
            what = path and self.places.catastrophic(strip_glob(path))
            if what and what != "the whole project":
                self._add("unattended_deny", f"{how} {what}: {short(self.text)}")

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
            risk: WriteRisk | None = self.places.write_risk(path)
            if what := self.places.catastrophic(strip_glob(path)):
                self._hard(f"{how} {what} (through a variable set to {path})")
                return
            if risk is not None and risk.level == "hard_deny":
                self._hard(f"{risk.what} (through a variable set to {path})")
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
            risky = risk.level == "risky"  # no rule covers a hard deny, and no sandbox makes it harmless
            self._add(risk.level, f"{risk.what}: {shown}", (target,) if risky else (), exact=risk.protected,
                      confinable=risky and risk.confinable, protected=risk.protected)

    def _unknown_write(self, target: str, cwd: str | None, shown: str) -> None:
        for path in self.runtime.candidates(target, cwd):
            risk = self.places.write_risk(path)
            if risk is not None and (risk.level == "hard_deny" or risk.protected):
                self._add(risk.level, f"{risk.what} (through a variable set to {path}): {shown}",
                          () if risk.level == "hard_deny" else (target,), exact=True, protected=risk.protected)
                return
        self._add("risky", f"writes to a path only known at run time: {shown}", (target,), confinable=True)

    # --- commands ------------------------------------------------------------------------------------

    def _risky(self, what: str, *triggers: str) -> None:
        """A risky finding about the current command, shown as "<what>: <the command>"."""
        self._add("risky", f"{what}: {short(self.text)}", triggers)

    def _hard(self, what: str) -> None:
        self._add("hard_deny", f"{what}: {short(self.text)}")

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
        call = Call.of(cmd, words, cwd)
        handler = _HANDLERS.get(call.name)
        if handler is not None:
            handler(self, call)
        for reason, triggers in option_risks(call.words, call.sub_at):
            self._risky(reason, *triggers)
        self._rows(call)

    def _rows(self, call: Call) -> None:
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

    def _remove(self, call: Call) -> None:
        name, opts = call.name, call.opts
        rec = [o for o in opts if o == "--recursive" or (name == "rm" and has_short(o, "rR"))]
        force = [o for o in opts if o == "--force" or (name == "rm" and has_short(o, "f"))]
        if "--no-preserve-root" in opts:
            self._hard("deletes with --no-preserve-root")
        if rec or force:
            how = " and ".join(w for w, on in (("recursively", rec), ("forcibly", force)) if on)
            self._risky(f"deletes {how}", *dict.fromkeys(rec + force))
        if name == "shred":
            self._shred(call)
        wholesale = "destroys the contents of" if name == "shred" else "deletes recursively" if rec else ""
        if "xargs" in call.cmd.wrappers:
            self._from_input(call, wholesale)
        targets, everything = self._targets(call.cmd, call.operands)
        from_find = call.cmd.origin == "find -exec" and any("{}" in t for t in targets)
        self._deletes(targets, call.cwd, bool(rec) or everything,
                      wholesale or ("deletes recursively" if everything else "deletes" if from_find else ""))

    def _shred(self, call: Call) -> None:
        self._risky("destroys file contents", call.program)
        if any(_DEVICE.match(t) for t in call.operands):
            self._hard("destroys a disk")

    def _from_input(self, call: Call, wholesale: str) -> None:
        """``xargs rm``: what it deletes comes from its input (see :meth:`_targets` for what can be read of it)."""
        if wholesale:
            self._add("unattended_deny", f"{wholesale} the paths it reads from its input: {short(self.text)}")
        else:
            self._risky("deletes the paths it reads from input", call.program)

    def _find(self, call: Call) -> None:
        if "-delete" in call.args:
            self._risky("deletes what find matches", "-delete")
            starts, narrowed = find_parts(call.args)
            if narrowed:
                self._wide_delete(starts, call.cwd, "deletes files it finds under")
            self._deletes(starts, call.cwd, not narrowed, "deletes what it finds under")

    def _copies(self, call: Call) -> None:
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
            path = self.places.resolve(dest, cwd) if dest is not None else None
            if dest is not None and path is None:
                self._unknown_target(dest, cwd, "deletes files in", blind=True)
            elif path is not None and (what := self.places.catastrophic(strip_glob(path))):
                self._hard(f"deletes what is not in the source from {what}")

    def _moves(self, sources: list[str], cwd: str | None) -> None:
        for s in sources:
            path = self.places.resolve(s, cwd)
            if what := path and self.places.catastrophic(path):
                self._hard(f"moves away {what}")
            elif path and self.places.outside(path):
                self._add("risky", f"moves files from outside the project: {s}", (s,))

    def _writes_operands(self, call: Call) -> None:
        for t in call.operands:
            if call.name == "truncate" and t[:1].isdigit():  # truncate -s 0 FILE
                continue
            if call.name == "truncate" and self.places.resolve(t, call.cwd) is None:
                self._unknown_target(t, call.cwd, "truncates", blind=True)
            else:
                self._write(t, call.cwd, t)

    def _dd(self, call: Call) -> None:
        for a in call.args:
            if a.startswith("of=") and self.places.resolve(a[3:], call.cwd) is None:
                self._unknown_target(a[3:], call.cwd, "writes raw data to", blind=True)
            elif a.startswith("of="):
                self._write(a[3:], call.cwd, a)

    def _permissions(self, call: Call) -> None:
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

    def _kill(self, call: Call) -> None:
        if kills_everything(call.words, call.name) or selects_every_process(self.cmds, self.i):
            self._hard("kills every process you own")
        elif call.name == "kill" and (pids := dynamic_pids(call.words)):
            self._risky("kills processes chosen at run time", *pids)

    def _source(self, call: Call) -> None:
        if call.operands:  # code this shell runs and can set anything for the commands after it
            self._risky("runs the shell code in a file", call.operands[0])

    def _ssh(self, call: Call) -> None:
        if len(call.operands) >= 2:
            self._risky("runs commands on another machine", call.program)

    def _git(self, call: Call) -> None:
        for reason, triggers in git_elsewhere(call.words, call.sub_at, self.places, call.cwd):
            self._add("risky", f"{reason}: {short(self.text)}", triggers, exact=True)

    def _crontab(self, call: Call) -> None:
        if "-r" in call.opts or call.operands:
            self._risky("replaces or removes your cron jobs", call.program)


_Handler = Callable[[_Checker, Call], None]
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
    "git": _Checker._git,
}
