"""What in a project's configuration needs the person's trust, and the record of the folders they trusted.

A cloned repository's ``.anvil/`` can hold settings that run programs (hooks, lint, verify, MCP servers), send
data elsewhere (an ``api_base`` that would receive the person's API key) or let the model do more without
asking (auto-approve, allow rules, allowed_dirs). Those apply only once the person trusts that folder with
exactly that content; the rest of the project's configuration (model, theme, limits, deny rules) applies at
once. The content includes the project files those settings run (``sh scripts/setup.sh`` in a hook: the text of
``scripts/setup.sh``, found by :mod:`anvil.core.policy.script_refs`), so a change to one is asked about again,
naming the file. :data:`RISKY_SETTINGS` is the one table of risky settings, a row each; :func:`split_layer`
cuts a config file's table into its harmless and risky parts, and :func:`assess` describes the risky part for
the question and compares its digest with what the person trusted. Reading the files is the settings layer's
job (:mod:`anvil.config`); the core never learns about trust.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.policy.script_refs import referenced_files
from anvil.core.private_files import private_dir

Split = Callable[[Any], tuple[Any, Any]]


def _whole(value: Any) -> tuple[Any, Any]:
    """Every value of the setting is risky."""
    return None, value


def _risky_if(risky: Callable[[Any], bool]) -> Split:
    """Risky for some values (``auto_approve = true``), harmless for the others (``false``)."""
    return lambda value: (None, value) if risky(value) else (value, None)


def _keys(*risky_keys: str) -> Split:
    """A table of which only some keys are risky (``[web] search_base_url``)."""
    def split(value: Any) -> tuple[Any, Any]:
        if not isinstance(value, dict):
            return None, value
        risky = {k: v for k, v in value.items() if k in risky_keys}
        return {k: v for k, v in value.items() if k not in risky_keys}, risky or None
    return split


def _writing_agents(value: Any) -> tuple[Any, Any]:
    """Sub-agent types: those that may change things are risky, read-only ones are not."""
    if not isinstance(value, dict):
        return None, value
    risky = {name: agent for name, agent in value.items() if not _read_only(agent)}
    return {name: agent for name, agent in value.items() if name not in risky}, risky or None


def _read_only(agent: Any) -> bool:
    return isinstance(agent, dict) and agent.get("read_only") is True


_TDD_COMMANDS = ("preflight", "review_command")


def _workflow_commands(value: Any) -> tuple[Any, Any]:
    """``[workflows]``: the TDD workflow's ``preflight`` and ``review_command`` run commands; the rest is harmless."""
    if not isinstance(value, dict) or not isinstance(value.get("tdd"), dict):
        return value, None
    tdd = value["tdd"]
    risky = {key: tdd[key] for key in _TDD_COMMANDS if key in tdd}
    if not risky:
        return value, None
    harmless = {**value, "tdd": {k: v for k, v in tdd.items() if k not in risky}}
    return harmless, {"tdd": risky}


def _workflow_lines(value: dict[str, Any]) -> list[str]:
    tdd = value["tdd"]
    preflight = tdd.get("preflight") if isinstance(tdd.get("preflight"), list) else []
    lines = [f"the TDD workflow's preflight runs {_code(c)}" for c in preflight]
    if tdd.get("review_command"):
        lines.append(f"the TDD workflow's review runs {_code(tdd['review_command'])}")
    return lines


#: ``[sandbox]`` values that only confine more; any other key or value loosens it, or may.
_TIGHTENING = {"mode": ("required",), "network": (False, []), "writable": ([],)}


def _loosens_sandbox(value: Any) -> bool:
    return not isinstance(value, dict) or any(v not in _TIGHTENING.get(k, ()) for k, v in value.items())


def _code(command: Any, limit: int = 120) -> str:
    text = " ".join(str(command).split())
    return f"`{text if len(text) <= limit else text[:limit - 1] + '…'}`"


def _hooks(value: dict[str, Any]) -> list[str]:
    lines = []
    for event, hooks in value.items():
        for hook in hooks:
            matcher = f" (for {hook['matcher']})" if hook.get("matcher") else ""
            lines.append(f"{event} runs {_code(hook['command'])}{matcher}")
    return lines


def _mcp_servers(value: dict[str, Any]) -> list[str]:
    lines = []
    for name, server in value.items():
        if server.get("enabled") is False:
            continue
        if server.get("command") is not None:
            line = f"{name} runs {_code(' '.join([server['command'], *server.get('args', [])]))}"
        else:
            line = f"{name} connects to {server.get('url')}"
        passed = [*server.get("env", {}), *server.get("headers", {})]
        lines.append(line + (f", passing {', '.join(passed)}" if passed else ""))
    return lines


def _as_written(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [f"{k} = {json.dumps(v, default=str)}" for k, v in value.items()]
    return [f"= {json.dumps(value, default=str)}"]


@dataclass(frozen=True)
class RiskySetting:
    """One setting a project may set only once the person trusts the folder."""

    key: str
    #: what the risky part will run or change, one line each
    describe: Callable[[Any], list[str]] = _as_written
    #: (harmless part, risky part) of the value as written; None for a part that is absent
    split: Split = _whole


RISKY_SETTINGS: tuple[RiskySetting, ...] = (
    RiskySetting("hooks", _hooks),
    RiskySetting("lint", lambda v: [f"after edits to {kind} files, runs {_code(c)}" for kind, c in v.items()]),
    RiskySetting("verify", lambda v: [f"runs {_code(c)} after each turn that changes files" for c in v]),
    RiskySetting("test_command", lambda v: [f"run_tests runs {_code(v)}"]),
    RiskySetting("autofix", lambda v: [f"when verification fails, runs {_code(c)} on {kind} files" for kind, cs in
                                       v.items() for c in cs], _risky_if(lambda v: isinstance(v, dict))),
    RiskySetting("workflows", _workflow_lines, _workflow_commands),
    RiskySetting("mcp_servers", _mcp_servers),
    RiskySetting("api_base", lambda v: [f"model requests, with your API key, go to {v}"]),
    RiskySetting("auto_approve", lambda v: ["every tool call runs without asking"],
                 _risky_if(lambda v: v is not False)),
    RiskySetting("mode", lambda v: [f"starts in {v} mode: every tool call runs without asking"],
                 _risky_if(lambda v: v == "auto")),
    RiskySetting("allowed_dirs", lambda v: [f"tools may read and change files in {d}" for d in v]),
    RiskySetting("permissions", lambda v: [f"`{p}` runs without asking" for p in v["allow"]], _keys("allow")),
    RiskySetting("web", lambda v: [f"web_search sends your queries and search API key to {v['search_base_url']}"],
                 _keys("search_base_url")),
    RiskySetting("agents", lambda v: [f"sub-agent `{n}` may use tools that change files or run commands" for n in v],
                 _writing_agents),
    RiskySetting("sandbox", split=_risky_if(_loosens_sandbox)),
    RiskySetting("import_claude_hooks", split=_risky_if(bool)),
    RiskySetting("import_mcp_json", split=_risky_if(bool)),
)
_BY_KEY = {row.key: row for row in RISKY_SETTINGS}


def split_layer(layer: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config file's table cut in two: what applies without trust, and what needs it."""
    harmless: dict[str, Any] = {}
    risky: dict[str, Any] = {}
    for key, value in layer.items():
        row = _BY_KEY.get(key)
        safe, unsafe = row.split(value) if row is not None else (value, None)
        if safe is not None:
            harmless[key] = safe
        if unsafe is not None:
            risky[key] = unsafe
    return harmless, risky


@dataclass(frozen=True)
class RiskyItem:
    """One thing a project's configuration would run or change: where it comes from, and what it does."""

    source: str  # a setting (``hooks``) or a file under .anvil/ (``.anvil/permissions.toml``)
    text: str

    def __str__(self) -> str:
        return f"{self.source}: {self.text}"


def describe(risky: dict[str, Any]) -> list[RiskyItem]:
    """The risky part of a config file, a line per command, server, rule or address."""
    items = []
    for key, value in risky.items():
        row = _BY_KEY[key]
        try:
            lines = row.describe(value)
        except (TypeError, AttributeError, KeyError, ValueError):  # not the shape the setting takes: as written
            lines = _as_written(value)
        items += [RiskyItem(key, line) for line in lines]
    return items


@dataclass(frozen=True)
class ProjectTrust:
    """A project's risky configuration, as it is now, and whether the person trusted exactly that."""

    root: Path
    items: tuple[RiskyItem, ...]
    digest: str
    #: the person trusted this folder with this content
    remembered: bool = False
    #: the person trusted this folder before, with other content
    changed: bool = False
    #: the project files its settings run, by path relative to the root: their sha256
    scripts: dict[str, str] = field(default_factory=dict)
    #: of those, the ones that changed (or appeared, or went) since the person trusted the folder
    changed_files: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        return not self.items or self.remembered

    @property
    def sources(self) -> list[str]:
        """Where the risky items come from, each once, in order (``hooks``, ``api_base``, ...)."""
        return list(dict.fromkeys(item.source for item in self.items))


def digest_of(content: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class TrustDecision:
    """What applies of the project's risky configuration in this run; carried by the settings."""

    trusted: bool = False
    #: the content the decision is about; None with ``trusted``: whatever is there (``--trust``)
    digest: str | None = None


class TrustStore:
    """The folders the person trusted: one JSON file in the data dir (0600), a digest per resolved path.

    A file that cannot be read counts as no folder trusted: anvil asks again rather than guessing."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def folders(self) -> dict[str, dict[str, Any]]:
        """Trusted folders by path: ``digest`` and ``trusted_at`` (seconds since the epoch)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        folders = data.get("folders") if isinstance(data, dict) else None
        return {path: record for path, record in (folders or {}).items() if isinstance(record, dict)}

    def digest(self, root: Path) -> str | None:
        record = self.folders().get(str(root.resolve()))
        return record.get("digest") if record else None

    def scripts(self, root: Path) -> dict[str, str] | None:
        """The scripts' hashes as the person trusted them (None: not recorded)."""
        record = self.folders().get(str(root.resolve()))
        scripts = record.get("scripts") if record else None
        return scripts if isinstance(scripts, dict) else None

    def remember(self, root: Path, digest: str, scripts: dict[str, str] | None = None) -> None:
        folders = self.folders()
        record: dict[str, Any] = {"digest": digest, "trusted_at": int(time.time())}
        if scripts:
            record["scripts"] = scripts
        folders[str(root.resolve())] = record
        self._write(folders)

    def forget(self, root: Path) -> bool:
        folders = self.folders()
        if folders.pop(str(root.resolve()), None) is None:
            return False
        self._write(folders)
        return True

    def _write(self, folders: dict[str, dict[str, Any]]) -> None:
        private_dir(self.path.parent)  # 0700 to the top: `anvil trust` may be the first thing run
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)  # an older temp file keeps its mode through O_CREAT
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": 1, "folders": folders}, out, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def assess(root: Path, risky_config: dict[str, Any], saved_allow: list[str], agents: dict[str, str],
           store: TrustStore, imported: dict[str, dict[str, Any]] | None = None) -> ProjectTrust:
    """``risky_config``: the risky part of ``.anvil/config.toml``; ``saved_allow``: the allow rules of
    ``.anvil/permissions.toml``; ``agents``: the text of each ``.anvil/agents/*.md`` whose agent may change
    things, by file name; ``imported``: by file (``.mcp.json``), the settings another tool's file adds, as
    anvil's config would write them."""
    items = describe(risky_config)
    items += [RiskyItem(".anvil/permissions.toml", f"`{p}` runs without asking") for p in saved_allow]
    items += [RiskyItem(f".anvil/agents/{file}", "a sub-agent that may use tools that change files or run "
                        "commands") for file in agents]
    for file, settings in (imported or {}).items():
        items += [RiskyItem(file, item.text) for item in describe(settings)]
    scripts = script_hashes(root, [risky_config, *(imported or {}).values()])
    items += [RiskyItem(path, "a script the commands above run, as it is now (anvil asks again if it changes)")
              for path in scripts]
    content: dict[str, Any] = {"config": risky_config, "permissions.toml": saved_allow, "agents": agents}
    if imported:  # only when there is some, so the digests of folders trusted before stay the same
        content["imported"] = imported
    if scripts:
        content["scripts"] = scripts
    digest = digest_of(content)
    known = store.digest(root)
    changed = known is not None and known != digest
    before = store.scripts(root) or {}
    changed_files = tuple(sorted(p for p in {*before, *scripts} if before.get(p) != scripts.get(p))) if changed else ()
    return ProjectTrust(root, tuple(items), digest, remembered=known == digest, changed=changed, scripts=scripts,
                        changed_files=changed_files)


def script_hashes(root: Path, configs: list[dict[str, Any]]) -> dict[str, str]:
    """The project files the commands in these settings run (hooks, MCP servers, lint, verify, test_command), by
    path relative to ``root``, with the sha256 of their content."""
    root = root.resolve()
    found: dict[str, str] = {}
    for config in configs:
        for command, cwd in configured_commands(config):
            for path in referenced_files(command, root, cwd):
                with contextlib.suppress(OSError):
                    found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return dict(sorted(found.items()))


def configured_commands(config: dict[str, Any]) -> Iterator[tuple[str | list[str], Path | None]]:
    """Every command line a config table runs, with the directory it runs in (None: the project's root).
    Values of the wrong shape are skipped: the settings layer reports them."""
    hooks, servers = config.get("hooks"), config.get("mcp_servers")
    for entries in hooks.values() if isinstance(hooks, dict) else ():
        for hook in entries if isinstance(entries, list) else ():
            if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                yield hook["command"], None
    for server in servers.values() if isinstance(servers, dict) else ():
        if isinstance(server, dict) and isinstance(server.get("command"), str) and server.get("enabled") is not False:
            args = [str(a) for a in server.get("args") or [] if isinstance(a, str | int | float)]
            cwd = server.get("cwd")
            yield [server["command"], *args], Path(cwd) if isinstance(cwd, str) else None
    lint, verify, test = config.get("lint"), config.get("verify"), config.get("test_command")
    yield from ((c, None) for c in (lint.values() if isinstance(lint, dict) else ()) if isinstance(c, str))
    yield from ((c, None) for c in (verify if isinstance(verify, list) else ()) if isinstance(c, str))
    if isinstance(test, str):
        yield test, None


def ignored_notice(check: ProjectTrust, trusted_at_start: bool) -> str:
    """The one line every front end shows when the project's risky settings did not apply."""
    names = ", ".join(check.sources)
    if check.changed_files:
        names += f" ({', '.join(check.changed_files)} changed since you trusted it)"
    if trusted_at_start:
        return (f"This folder's configuration changed since anvil started ({names}): the rules in "
                ".anvil/permissions.toml and the agents in .anvil/agents/ are ignored until you start anvil "
                "again and trust it.")
    return (f"This folder is not trusted, so its settings that run commands or send data were ignored: {names}. "
            "Run `anvil trust` to see and trust them, or pass --trust.")
