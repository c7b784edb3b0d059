"""Where a path in a shell command points, and what deleting or writing there would put at risk.

:mod:`anvil.core.policy.command_risk` finds the words a command deletes, writes, moves or re-permissions; this module
says where they land (the project, scratch space, the home directory, a system directory) and how much that
matters. Kept apart because it is a question about places, not commands: every command check asks it the same way.

* Paths are resolved without touching the disk: ``~``, ``$HOME``, ``$PWD`` and ``~+`` are expanded, relative paths
  follow the working directory the caller tracks (``cd`` earlier in the same command), a trailing glob
  (``dir/*``) counts as the directory (:func:`strip_glob`), so a verdict depends on the command's text alone.
* Scratch space strictly below ``/tmp`` and ``/var/tmp`` is not "outside": builds and tests write there all day,
  and flagging it would teach people to click through.
* Protected files (anvil's configuration, anything under a ``.git``, shell start-up files, the scripts anvil's
  hooks and MCP servers run: :mod:`anvil.core.tools.protected`) are asked about wherever they are and in every
  mode, like the file tools' writes to them. The kernel's files (``/proc``, ``/sys``) are never "contained" by
  the sandbox's view of the filesystem, so a write there always asks.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from anvil.core.policy.shell_command import is_dynamic
from anvil.core.tools.protected import classify as protected_kind

WriteLevel = Literal["risky", "hard_deny"]

SCRATCH = ("/tmp/", "/var/tmp/", "/private/tmp/", "/dev/shm/")
_HARMLESS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/stdin"})
_BLOCK_DEVICE = re.compile(r"/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|"
                           r"mapper/|loop\d|sr\d)")
_SYSTEM = frozenset({"/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt", "/proc",
                     "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/mnt", "/media", "/Users",
                     "/System", "/Library", "/Applications", "/Volumes", "/private", "/usr/bin",
                     "/usr/lib", "/usr/local", "/usr/local/bin", "/var/lib"})
_SECRETS = frozenset({".ssh", ".gnupg", ".aws", ".kube", ".docker", ".netrc", ".npmrc", ".pypirc",
                      ".git-credentials", ".config/gh"})


@dataclass(frozen=True)
class WriteRisk:
    level: WriteLevel
    #: the start of the reason ("writes outside the project")
    what: str
    #: the OS sandbox enforces where this write may land (not so for the kernel's files or protected ones)
    confinable: bool = True
    #: a protected file: asked about in every mode, auto-approve included
    protected: bool = False


def inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def strip_glob(path: str) -> str:
    """``dir/*`` as ``dir``: deleting everything in a directory is as bad as deleting the directory."""
    return posixpath.dirname(path) if re.search(r"[*?]", posixpath.basename(path)) else path


@dataclass(frozen=True)
class Places:
    """The directories a command's paths are judged against, as normalised absolute paths."""

    root: str  # the project
    home: str
    #: anvil's user configuration directories (besides ~/.config/anvil)
    config_dirs: tuple[Path, ...] = ()
    #: files anvil's hooks and MCP servers run outside the sandbox
    scripts: tuple[str, ...] = ()

    @classmethod
    def of(cls, root: Path, home: Path, config_dirs: Sequence[Path] = (), scripts: Sequence[Path] = ()) -> Places:
        return cls(posixpath.normpath(str(root)), posixpath.normpath(str(home)),
                   (*config_dirs, home / ".config" / "anvil"),
                   tuple(posixpath.normpath(str(s)) for s in scripts))

    def resolve(self, word: str, cwd: str | None) -> str | None:
        """The absolute path ``word`` names when run in ``cwd`` (None: unknown), or None when only the
        running shell could tell (``$x``, ``$(...)``, ``~user``)."""
        for prefix, value in (("~", self.home), ("$HOME", self.home), ("${HOME}", self.home),
                              ("$PWD", cwd), ("${PWD}", cwd), ("~+", cwd)):
            if word == prefix or word.startswith(prefix + "/"):
                if value is None:
                    return None
                word = value + word[len(prefix):]
                break
        if is_dynamic(word) or word.startswith("~"):
            return None
        if not word.startswith("/"):
            if cwd is None:
                return None
            word = f"{cwd}/{word}"
        return "/" + posixpath.normpath(word).lstrip("/")

    def catastrophic(self, path: str) -> str | None:
        """What deleting ``path`` (or everything in it) would destroy, when that is unthinkable."""
        if path == "/":
            return "the whole filesystem"
        if path == self.home:
            return "your home directory"
        if path in _SYSTEM or self.home.startswith(path + "/"):
            return f"a system directory ({path})"
        if path == self.root or self.root.startswith(path + "/"):
            return "the whole project"
        return None

    def outside(self, path: str) -> bool:
        """Outside the project and not scratch space: changing things there needs the person's eye."""
        return not inside(path, self.root) and not path.startswith(SCRATCH)

    def write_risk(self, path: str | None) -> WriteRisk | None:
        """What writing to the resolved ``path`` risks; None when it is fine. A target only known at run time
        (None) is fine here: that is most build output (the caller decides)."""
        if path is None or path in _HARMLESS or path.startswith(("/dev/fd/", "/proc/self/fd/")):
            return None
        if _BLOCK_DEVICE.match(path):
            return WriteRisk("hard_deny", "writes to a raw disk device")
        if path == "/proc/sysrq-trigger":
            return WriteRisk("hard_deny", "can crash or reboot the machine (the kernel's SysRq trigger)")
        if inside(path, "/proc") or inside(path, "/sys"):
            return WriteRisk("risky", "changes the running kernel's settings", confinable=False)
        if kind := self.protected(path):
            return WriteRisk("risky", f"writes to {kind}", confinable=False, protected=True)
        if inside(path, self.root) or path.startswith(SCRATCH):
            return None
        if inside(path, self.home):
            rel = path[len(self.home) + 1:]
            if any(inside(rel, s) for s in _SECRETS):
                return WriteRisk("risky", "writes to credentials or keys")
            if rel.startswith("."):
                return WriteRisk("risky", "writes to a dotfile in your home directory")
        return WriteRisk("risky", "writes outside the project")

    def protected(self, path: str) -> str | None:
        """The kind of protected file ``path`` is (as the file tools judge it), or None."""
        return protected_kind(PurePosixPath(path), list(self.config_dirs), None, [Path(s) for s in self.scripts])
