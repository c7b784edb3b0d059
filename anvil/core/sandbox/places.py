"""Where a sandboxed command may write, what stays read-only inside that, and what it cannot see: a mount plan.

The policy, the same on every OS:

* Read anywhere. Write only in the project, the session's private temp dir (seen at ``/tmp``, ``/var/tmp`` and
  ``$TMPDIR``), the ``allowed_dirs``, the package managers' caches in the home directory and ``[sandbox]
  writable``.
* Read-only even inside those: anvil's configuration (``.anvil/config.toml``, ``.anvil/permissions.toml``,
  ``.anvil/agents/``, ``.anvil/hooks/``, the user config dir), anvil's data dir, what git reads as configuration
  or as a pointer to another git directory (:mod:`.git_places`), the scripts anvil's hooks and MCP servers run
  outside the sandbox (``Places.scripts``), and, when the home directory is writable, the shell's start-up
  files, ``~/.gitconfig`` and ``~/.ssh``. The rest of ``.anvil/`` (work files) and of ``.git`` stays writable.
* Hidden: ``/run`` (the session bus, docker's socket, agents' sockets) and the host's temp dir (tmux's, X11's
  and ssh-agent's sockets): a connection to a socket there would run code outside the sandbox.

Protected paths that do not exist yet get an empty stand-in (a *placeholder*) for the command's lifetime, so
a command cannot create them either. Every directory between a writable root and a protected path is bound
onto itself: a mount point cannot be renamed, so ``mv .git elsewhere && mkdir .git`` fails.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from anvil.core.sandbox.git_places import PlaceKind, Protected, git_protected
from anvil.core.sandbox.limits import DEFAULT_MAX_PROCESSES

SandboxMode = Literal["auto", "required", "off"]
MountKind = Literal["ro-bind", "bind", "tmpfs", "dir"]
#: Files and directories under ``.anvil/`` that configure anvil or run code: never writable from a command.
ANVIL_CONFIG_NAMES = frozenset({"config.toml", "permissions.toml", "agents", "hooks"})
#: In a writable home directory: files a login shell, git or ssh read and act on.
HOME_PROTECTED = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
                  ".zshenv", ".zlogin", ".cshrc", ".tcshrc", ".kshrc", ".config/fish", ".gitconfig",
                  ".config/git", ".ssh", ".pypirc", ".npmrc", ".netrc")
#: Kinds of mounts in the order they go on at the same depth: what is writable first, read-only on top.
_ORDER: dict[str, int] = {"tmpfs": 0, "dir": 1, "bind": 2, "pin": 3, "ro-bind": 4, "reopen": 5}


@dataclass(frozen=True)
class SandboxSettings:
    """The ``[sandbox]`` settings, as plain values."""

    mode: SandboxMode = "auto"
    #: outbound network: all of it, none, or (with ``hosts``) only these hosts through anvil's proxy
    network: bool = False
    hosts: tuple[str, ...] = ()
    #: extra writable paths (``[sandbox] writable``)
    writable: tuple[Path, ...] = ()
    #: the package managers' caches in the home directory are writable
    writable_caches: bool = True
    #: how many processes (threads included) one command may have at once; 0 for no cap
    max_processes: int = DEFAULT_MAX_PROCESSES


@dataclass(frozen=True)
class Places:
    """The directories the policy is about."""

    root: Path
    allowed_dirs: tuple[Path, ...] = ()
    config_dir: Path | None = None  # the user's anvil config dir
    data_dir: Path | None = None  # anvil's data dir
    home: Path = field(default_factory=Path.home)
    #: files in the project that anvil's hooks and MCP servers run outside the sandbox
    scripts: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", self.root.resolve())


@dataclass(frozen=True)
class Mount:
    kind: MountKind
    dest: Path
    src: Path | None = None  # binds: the host path (the same as dest, except for the private temp dir)
    #: why it is there, for the ordering (see _ORDER): "pin" and "reopen" are writable binds
    role: str = ""

    @property
    def depth(self) -> int:
        return len(self.dest.parts)


@dataclass
class MountPlan:
    mounts: list[Mount]
    #: protected paths that did not exist: created empty for the command, removed after if still empty
    placeholders: list[tuple[Path, PlaceKind]]
    #: host directories a command may write (without the private temp dir), for messages and profiles
    writable: list[Path]
    #: read-only paths inside the writable ones, for messages and profiles
    protected: list[Path]
    #: directories between a writable root and a protected path, which must not be renamed
    pinned: list[Path]
    temp_dirs: list[Path]
    #: the protected scripts that hooks and MCP servers run outside the sandbox
    scripts: list[Path] = field(default_factory=list)


def cache_dirs(home: Path, env: Mapping[str, str]) -> list[Path]:
    """The package managers' caches in the home directory, those that exist. pip, pre-commit, go's build
    cache, uv, poetry, yarn and most other tools keep theirs in ``$XDG_CACHE_HOME``; npm, cargo and go's
    module cache do not. Never a directory of programs on PATH (``~/.cargo/bin``, ``~/go/bin``)."""
    cargo = Path(env.get("CARGO_HOME") or home / ".cargo")
    gopath = Path((env.get("GOPATH") or "").split(os.pathsep)[0] or home / "go")
    candidates = [Path(env.get("XDG_CACHE_HOME") or home / ".cache"),
                  Path(env.get("npm_config_cache") or home / ".npm"),
                  cargo / "registry", cargo / "git", cargo / ".package-cache", cargo / ".package-cache-mutate",
                  Path(env.get("GOMODCACHE") or gopath / "pkg" / "mod")]
    return [p for p in candidates if p.exists()]


def temp_dirs(env: Mapping[str, str]) -> list[Path]:
    """Where commands look for a temp dir; the sandbox shows its private one at each."""
    dirs = [Path("/tmp"), Path("/var/tmp")]
    if env.get("TMPDIR"):
        dirs.append(Path(env["TMPDIR"]))
    found: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in found:
            found.append(d.resolve())
    return found


def _inside(path: Path, base: Path) -> bool:
    inner, outer = str(path), str(base)
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def _outermost(path: Path, roots: list[Path]) -> Path | None:
    containing = [r for r in roots if _inside(path, r)]
    return min(containing, key=lambda r: len(r.parts)) if containing else None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def anvil_protected(places: Places) -> tuple[list[Protected], list[Path]]:
    """anvil's own files: (path, kind, placeholder when missing), and the work files under ``.anvil/`` that
    stay writable under the read-only ``.anvil``."""
    dot_anvil = places.root / ".anvil"
    protected: list[Protected] = [(dot_anvil, "dir", True)]
    reopened: list[Path] = []
    if dot_anvil.is_dir() and not dot_anvil.is_symlink():
        with os.scandir(dot_anvil) as entries:
            reopened = sorted(Path(e.path) for e in entries
                              if e.name not in ANVIL_CONFIG_NAMES and not e.is_symlink())
    for own in (places.config_dir, places.data_dir):
        if own is not None:
            protected.append((own, "dir", True))
    protected += [(places.home / name, "file", False) for name in HOME_PROTECTED]  # kept only when they exist
    protected += [(script, "file", False) for script in places.scripts]
    return protected, reopened


def plan_mounts(places: Places, settings: SandboxSettings, private_tmp: Path,
                env: Mapping[str, str] | None = None, *, extra: list[Mount] | None = None) -> MountPlan:
    """The mounts that build the sandbox's view of the filesystem, in the order they must be made."""
    env = os.environ if env is None else env
    writable = _writable_roots(places, settings, env)
    mounts: list[Mount] = list(extra or [])
    tmp = temp_dirs(env)
    mounts += [Mount("bind", d, private_tmp) for d in tmp]
    mounts += _masks(settings, env)
    mounts += [Mount("bind", w, w) for w in writable]
    anvil_paths, reopened = anvil_protected(places)
    protected: list[Path] = []
    placeholders: list[tuple[Path, PlaceKind]] = []
    for path, kind, placeholder in dict.fromkeys([*anvil_paths, *git_protected(places.root)]):
        real = _real(path) if path.exists() else path
        if real in protected:
            continue
        if _outermost(real, writable) is None:
            continue  # already read-only
        if not path.exists() and not path.is_symlink():
            if not placeholder:
                continue
            placeholders.append((path, kind))
        protected.append(real)
    pinned = _pins(protected, writable)
    mounts += [Mount("bind", p, p, role="pin") for p in pinned]
    mounts += [Mount("ro-bind", p, p) for p in protected]
    mounts += [Mount("bind", p, p, role="reopen") for p in reopened if _outermost(p, writable) is not None]
    mounts.sort(key=lambda m: (m.depth, _ORDER[m.role or m.kind]))
    scripts = [_real(s) for s in places.scripts if _real(s) in protected]
    return MountPlan(mounts, placeholders, writable, protected, pinned, tmp, scripts)


def _writable_roots(places: Places, settings: SandboxSettings, env: Mapping[str, str]) -> list[Path]:
    candidates = [places.root, *places.allowed_dirs, *settings.writable]
    if settings.writable_caches:
        candidates += cache_dirs(places.home, env)
    roots: list[Path] = []
    for path in candidates:
        path = _real(path.expanduser())
        if path.exists() and path not in roots and not _kernel(path):
            roots.append(path)
    # a root inside another is already writable: binding it again would only hide what is protected in it
    return [r for r in roots if not any(o != r and _inside(r, o) for o in roots)]


def _kernel(path: Path) -> bool:
    """The kernel's files (``/proc``, ``/sys``, ``/dev``): never made writable, whatever ``[sandbox] writable`` says."""
    return any(path == Path(k) or Path(k) in path.parents for k in ("/proc", "/sys", "/dev")) or path == Path("/")


def _pins(protected: list[Path], writable: list[Path]) -> list[Path]:
    pinned: list[Path] = []
    for path in protected:
        root = _outermost(path, writable)
        if root is None:
            continue
        for parent in path.parents:
            if parent == root or not _inside(parent, root):
                break
            if parent not in pinned and parent not in protected:
                pinned.append(parent)
    return pinned


def _masks(settings: SandboxSettings, env: Mapping[str, str]) -> list[Mount]:
    """``/run`` becomes an empty tmpfs (with the runtime dir and, for DNS, resolv.conf's target kept)."""
    mounts: list[Mount] = []
    run = Path("/run")
    if not run.is_dir():
        return mounts
    mounts.append(Mount("tmpfs", run))
    runtime_dir = env.get("XDG_RUNTIME_DIR")
    if runtime_dir and _inside(Path(runtime_dir), run):
        mounts.append(Mount("dir", Path(runtime_dir)))
    resolv = _real(Path("/etc/resolv.conf"))
    if (settings.network and not settings.hosts) and _inside(resolv, run) and resolv.exists():
        mounts.append(Mount("ro-bind", resolv, resolv))
    return mounts
