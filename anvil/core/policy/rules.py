"""Allow and deny rules for commands, and the pattern "always allow" offers.

Decisions:

* A rule is a pattern matched against each simple command's normalised text (environment prefixes,
  program and arguments, quotes removed, wrappers like ``env``/``timeout`` stripped, file redirections
  kept, all joined by single spaces). Environment prefixes are part of it (``GIT_DIR=x git status`` is not
  ``git status``), except the few that only change how output looks (``NODE_ENV``, ``NO_COLOR``:
  :mod:`anvil.core.policy.env_vars`). ``*`` matches any run of characters, ``?`` one; ``\\*`` is a literal
  star. ``[`` is literal, unlike fnmatch, because ``[ -f x ]`` is a command people run.
* A ``*`` standing alone as a word matches zero or more whole words, so ``X *`` also matches bare
  ``X``: ``git commit *`` matches ``git commit`` and ``git commit -m x`` but not ``git commitx``, and
  ``git push * --force *`` matches ``git push --force``. A ``*`` inside a word matches any run of
  characters, spaces included: ``pytest*`` matches ``pytest -x`` and also ``pytest-watch``.
* Every simple command must be allowed on its own: ``git status && rm -rf x`` needs a rule for
  both, so a rule can never carry a chained or substituted command along with it.
* Deny beats allow, whatever the scopes: a deny rule is a fence someone put up on purpose, and a
  broad allow added later ("always allow git *") must not quietly open it. Deny rules also match
  the command as written (``nice rm ...``), with the program's base name (``/bin/rm``), and inside
  ``sudo``; allow rules match only the normalised text. Deny is wide, allow is narrow.
* When asking, the FIRST simple command that no rule covers is the one shown with a pattern:
  the person decides one thing at a time, and the pattern saved is for that part only, never the
  whole chain and never a bare ``*``. The pattern is the program plus its subcommand (``git push *``,
  ``npm run test *``, ``python -m pytest *``), so the same kind of command will not be asked again.
* Tool-level rules (``web_fetch``, ``mcp__server__*``) are plain fnmatch on the tool name.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Literal

from anvil.core.policy.shell_command import ParsedCommand, SimpleCommand
from anvil.core.policy.shell_parse import parse_command
from anvil.core.policy.shell_words import SHELLS, privileged_inner

Scope = Literal["session", "project", "user"]
Effect = Literal["allow", "deny"]
_F = frozenset

# tool: (options that take a value before the subcommand, subcommands that take one more word)
_SUBCOMMANDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "git": (_F({"-C", "-c", "--git-dir", "--work-tree", "--namespace"}),
            _F({"stash", "remote", "worktree", "submodule", "bisect", "notes", "lfs", "sparse-checkout"})),
    "npm": (_F({"--prefix", "-w", "--workspace"}), _F({"run", "run-script", "exec", "x", "cache"})),
    "pnpm": (_F({"-C", "--dir", "--filter", "-F"}), _F({"run", "exec", "dlx"})),
    "yarn": (_F({"--cwd"}), _F({"run", "dlx", "exec", "workspace"})),
    "bun": (_F(), _F({"run", "x"})),
    "cargo": (_F({"--config", "-Z"}), _F()),
    "go": (_F(), _F({"mod", "tool"})),
    "docker": (_F({"-H", "--host", "--context", "-c", "--config", "--log-level"}),
               _F({"compose", "image", "container", "volume", "network", "system", "buildx", "builder",
                   "context", "manifest", "plugin"})),
    "kubectl": (_F({"-n", "--namespace", "--context", "--kubeconfig", "--cluster", "-s", "--server"}),
                _F({"config", "rollout", "auth"})),
    "uv": (_F({"--directory", "--project"}), _F({"pip", "run", "tool", "python", "cache"})),
    "poetry": (_F({"-C", "--directory"}), _F({"run", "env", "cache", "self"})),
    "make": (_F({"-C", "-f", "--file", "--directory", "-j", "-l", "-o", "-W", "-I"}), _F()),
    "gh": (_F({"-R", "--repo"}), _F({"pr", "issue", "repo", "release", "run", "workflow", "gist", "api",
                                     "auth", "secret", "label", "cache", "codespace"})),
    "bundle": (_F(), _F({"exec"})),
    "pipx": (_F(), _F({"run"})),
    "hatch": (_F(), _F({"run", "env"})),
    "terraform": (_F({"-chdir"}), _F({"state", "workspace"})),
    "helm": (_F({"-n", "--namespace"}), _F({"repo"})),
}
for _alias, _tool in (("podman", "docker"), ("pip3", "pip"), ("gradle", "mvn")):
    _SUBCOMMANDS[_alias] = _SUBCOMMANDS.get(_tool, (_F(), _F()))
for _tool in ("pip", "mvn", "gradlew", "npx", "pnpx", "bunx", "uvx", "brew", "apt", "apt-get", "dnf",
              "systemctl", "rustup", "dotnet", "deno", "conda", "mix", "rake", "composer", "manage.py",
              "tox", "nox", "turbo", "nx", "twine", "gem", "swift", "flutter", "aws", "gcloud", "az"):
    _SUBCOMMANDS.setdefault(_tool, (_F(), _F()))
_INTERPRETERS = re.compile(r"(python[0-9.]*|py|pypy3?|node|nodejs|deno|ruby|perl|php|Rscript)")


def subcommand_index(words: tuple[str, ...] | list[str]) -> int | None:
    """Index of the subcommand in ``git -C x push ...`` (3), or None for tools without one."""
    if not words:
        return None
    spec = _SUBCOMMANDS.get(posixpath.basename(words[0]))
    if spec is None:
        return None
    i = 1
    while i < len(words) and (words[i].startswith("-") or words[i].startswith("+")):
        i += 2 if words[i] in spec[0] else 1
    return i if i < len(words) else None


def command_prefix(words: tuple[str, ...] | list[str]) -> int:
    """How many leading words name what runs: ``git push`` (2), ``npm run test`` (3),
    ``python -m pytest`` (3), ``bash -c`` (2), ``rm`` (1). Used for "always allow" patterns."""
    if not words:
        return 0
    name = posixpath.basename(words[0])
    spec = _SUBCOMMANDS.get(name)
    if spec is not None:
        i = subcommand_index(words)
        if i is None:
            return len(words)
        if words[i] in spec[1] or name == "gh":
            return i + 2 if i + 1 < len(words) and not words[i + 1].startswith("-") else i + 1
        return i + 1
    if name in SHELLS or _INTERPRETERS.fullmatch(name):
        value_options = ("-X", "-W", "-o", "-O", "-I", "-r", "--require", "--rcfile", "--init-file")
        for i, w in enumerate(words[1:], start=1):
            if name in SHELLS and w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
                return i + 1  # bash -lc
            if name not in SHELLS and w == "-m":
                return min(i + 2, len(words))  # python -m pytest
            if name not in SHELLS and w in ("-c", "-e", "--eval", "-p", "--print"):
                return i + 1  # python -c, node -e: the code itself is not a subcommand
            if not w.startswith("-") and words[i - 1] not in value_options:
                return i + 1  # the script
    return 1


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    words = pattern.split(" ")
    out = []
    for k, word in enumerate(words):
        if word == "*":  # a lone star is zero or more words: `X *` matches `X`, `a * b` matches `a b`
            out.append(".*" if len(words) == 1 else "(?:.* )?" if k == 0 else "(?: .*)?")
            continue
        if k > 0 and not (k == 1 and words[0] == "*"):
            out.append(" ")
        i = 0
        while i < len(word):
            c = word[i]
            if c == "\\" and i + 1 < len(word):
                out.append(re.escape(word[i + 1]))
                i += 2
                continue
            out.append(".*" if c == "*" else "." if c == "?" else re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def normalize_pattern(pattern: str) -> str:
    return " ".join(pattern.split())


def pattern_matches(pattern: str, text: str) -> bool:
    """Does a rule pattern match a normalised command text? (See the module docstring.)"""
    return _compile(normalize_pattern(pattern)).fullmatch(text) is not None


def escape_word(word: str) -> str:
    """A word as a pattern that matches only itself."""
    return re.sub(r"([\\*?])", r"\\\1", word)


def tool_rule_matches(pattern: str, tool_name: str) -> bool:
    """Tool-level rules: ``web_fetch``, ``mcp__github__*``."""
    return fnmatchcase(tool_name, pattern.strip())


class RuleError(ValueError):
    """A pattern no rule can be made of (empty, or an allow rule that would allow everything)."""


@dataclass(frozen=True)
class CommandRule:
    pattern: str
    effect: Effect = "allow"
    scope: Scope = "session"

    def __post_init__(self) -> None:
        pattern = normalize_pattern(self.pattern)
        if not pattern:
            raise RuleError("an empty rule matches no command; remove it or write the command")
        if self.effect == "allow" and not pattern.replace("*", "").replace("?", "").strip():
            raise RuleError(f"the allow rule {pattern!r} would allow every command; use auto-approve")
        object.__setattr__(self, "pattern", pattern)

    def matches(self, text: str) -> bool:
        return pattern_matches(self.pattern, text)

    def names(self, word: str, exact: bool = False) -> bool:
        """Does the pattern spell out ``word`` rather than let a wildcard stand for it? A rule
        ``git push --force *`` names ``--force``; ``git push *`` does not; ``rm -rf /tmp/*`` names
        ``/tmp/build`` (unless ``exact``: then only the word itself, as ``GIT_DIR=x``, names it).
        Used to keep risky parts asking under broad rules."""
        if f" {escape_word(word)} " in f" {self.pattern} ":
            return True
        for part in self.pattern.split(" ") if not exact else ():
            literal = re.sub(r"\\.|[*?]", lambda m: m.group(0)[1:], part)
            if literal.strip("-") and pattern_matches(part, word):
                return True
        return False

    @property
    def specificity(self) -> int:
        return len(self.pattern.replace("*", "").replace("?", ""))


@dataclass(frozen=True)
class CommandDecision:
    action: Literal["allow", "deny", "ask"]
    #: allow: the rule that covered each part (first use only); deny: the rule that matched
    rules: tuple[CommandRule, ...] = ()
    #: deny: the part denied; ask: the first part no rule covers
    command: SimpleCommand | None = None
    #: ask: what "always allow" would save for that part
    suggested_pattern: str | None = None
    #: ask: why the command could not be read, when it could not
    error: str | None = None

    @property
    def rule(self) -> CommandRule | None:
        return self.rules[0] if self.rules else None


class CommandRules:
    """The allow and deny rules of all scopes: those the settings layer passes in, and those "always
    allow" adds with :meth:`add`."""

    def __init__(self, rules: Iterable[CommandRule] = ()) -> None:
        self.rules: list[CommandRule] = []
        for rule in rules:
            self.add(rule.pattern, rule.effect, rule.scope)

    @classmethod
    def from_lists(cls, allow: Mapping[Scope, Iterable[str]] | None = None,
                   deny: Mapping[Scope, Iterable[str]] | None = None) -> CommandRules:
        rules = [CommandRule(p, "allow", scope) for scope, ps in (allow or {}).items() for p in ps]
        rules += [CommandRule(p, "deny", scope) for scope, ps in (deny or {}).items() for p in ps]
        return cls(rules)

    def add(self, pattern: str, effect: Effect = "allow", scope: Scope = "session") -> CommandRule:
        rule = CommandRule(pattern, effect, scope)
        if rule not in self.rules:
            self.rules.append(rule)
        return rule

    def remove(self, pattern: str, effect: Effect | None = None, scope: Scope | None = None) -> bool:
        pattern = normalize_pattern(pattern)
        before = len(self.rules)
        self.rules = [r for r in self.rules if not (r.pattern == pattern and effect in (None, r.effect)
                                                    and scope in (None, r.scope))]
        return len(self.rules) != before

    def patterns(self, effect: Effect, scope: Scope) -> list[str]:
        return [r.pattern for r in self.rules if r.effect == effect and r.scope == scope]

    def allow_rules_for(self, command: SimpleCommand) -> tuple[CommandRule, ...]:
        """Allow rules matching one simple command, most specific first."""
        text = command.normalized
        found = [r for r in self.rules if r.effect == "allow" and r.matches(text)]
        return tuple(sorted(found, key=lambda r: -r.specificity))

    def deny_rule_for(self, command: SimpleCommand) -> CommandRule | None:
        views = _deny_views(command)
        return next((r for r in self.rules if r.effect == "deny" and any(r.matches(v) for v in views)), None)

    def decide(self, command: str | ParsedCommand) -> CommandDecision:
        """Rules only, no risk: deny if any part is denied, allow if every part is allowed, else ask
        about the first part no rule covers."""
        parsed = parse_command(command) if isinstance(command, str) else command
        if not parsed.ok:
            return CommandDecision("ask", error=parsed.error)
        for cmd in parsed.commands:
            rule = self.deny_rule_for(cmd)
            if rule is not None:
                return CommandDecision("deny", (rule,), cmd)
        used: list[CommandRule] = []
        for cmd in parsed.commands:
            if not cmd.words:
                continue  # assignments and bare redirections run no program
            rules = self.allow_rules_for(cmd)
            if not rules:
                return CommandDecision("ask", command=cmd, suggested_pattern=suggest_pattern(cmd))
            if rules[0] not in used:
                used.append(rules[0])
        return CommandDecision("allow", tuple(used))


def _deny_views(command: SimpleCommand) -> set[str]:
    """The texts a deny rule is tried against: normalised, as written, by base name, inside sudo."""
    views = {command.normalized, " ".join(command.tokens(command.env + command.argv)),
             " ".join(command.tokens(command.argv))}
    inner = privileged_inner(command.words)
    for words in (command.words, inner[1] if inner else ()):
        if words:
            views.add(" ".join(command.tokens(words)))
            views.add(" ".join(command.tokens((posixpath.basename(words[0]), *words[1:]))))
    return views


def suggest_pattern(command: SimpleCommand, keep: Iterable[str] = ()) -> str:
    """The "always allow" pattern for one simple command: program and subcommand plus `` *``
    (``git push *``, ``npm run test *``, ``python -m pytest *``, ``rm *``). Words in ``keep`` (the
    risky parts, e.g. ``-rf``) stay literal so the saved rule names them and will stick:
    ``rm -rf *``, ``git push * --force *``. Always matches the command it was made from."""
    tokens = command.tokens()
    if not command.words:
        raise ValueError("nothing runs here, so no pattern is needed")
    keep = set(keep)
    n = len(command.rule_env) + command_prefix(command.words)
    out = [escape_word(w) for w in tokens[:n]]
    for word in tokens[n:]:
        if word in keep:
            out.append(escape_word(word))
        elif out[-1] != "*":
            out.append("*")
    if out[-1] != "*":
        out.append("*")
    pattern = " ".join(out)
    return pattern if pattern_matches(pattern, command.normalized) else escape_word(command.normalized)
