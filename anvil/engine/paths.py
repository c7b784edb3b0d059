"""Where the engine's socket lives and which engine a run may use: standard library only (the client imports
this before deciding whether to import anything heavy).

One engine per (user, data directory, anvil install): the socket is ``<data dir>/engine/engine-<key>.sock`` in a
0700 directory, the socket itself 0600, and ``<key>`` hashes the data directory and what the engine's imports
depend on (the Python executable, where anvil is installed, its version, PYTHONPATH and litellm's import-time
settings) and the cgroups of the process (an engine serves only runs from its own), so a run is never served
by code other than what it would have run itself. A socket address has at
most 107 bytes; under a data directory too deep for that, the socket goes in ``/tmp/anvil-engine-<uid>/``
(0700, checked like the other).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

#: litellm reads some of its settings when it is imported; runs that differ in them need their own engine
IMPORT_TIME_PREFIXES = ("LITELLM_",)
#: names that look like secrets are never handed to the engine process itself (only to a run's child)
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
#: what the engine process is started with: enough to import and to find its files, no keys
ENGINE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
              "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "TERM")
#: the longest path a Unix socket address takes on Linux, less its terminating NUL
SOCKET_PATH_MAX = 107


class EngineUnsafe(Exception):
    """The engine's directory or socket is not private to this user: it must not be used."""


def data_dir(environ: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    """anvil's data directory, as ``anvil.config.data_dir`` has it (that module is too heavy to import here)."""
    base = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "share")
    return Path(base) / "anvil"


def import_settings(environ: os._Environ[str] | dict[str, str] = os.environ) -> dict[str, str]:
    """The environment variables litellm reads at import, secrets left out."""
    return {name: value for name, value in environ.items()
            if name.startswith(IMPORT_TIME_PREFIXES) and not any(word in name.upper() for word in SECRET_WORDS)}


def engine_key(environ: os._Environ[str] | dict[str, str] = os.environ) -> str:
    from anvil import __version__

    package = Path(__file__).resolve().parent.parent
    parts = [str(data_dir(environ)), os.path.realpath(sys.executable), str(package), __version__,
             environ.get("PYTHONPATH", ""), _cgroups(),
             environ.get("PYTHONHOME", ""), *sorted(f"{k}={v}" for k, v in import_settings(environ).items())]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _cgroups() -> str:
    """This process's cgroups: an engine serves only runs from its own (a terminal's scope, a limited slice)."""
    try:
        with open("/proc/self/cgroup") as file:
            return file.read()
    except OSError:
        return ""


def engine_dir(environ: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    """Where the engine's socket, lock and log are."""
    return socket_path(environ).parent


def socket_path(environ: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    name = f"engine-{engine_key(environ)}.sock"
    path = data_dir(environ) / "engine" / name
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path
    return Path("/tmp") / f"anvil-engine-{os.getuid()}" / name


def engine_environment(environ: os._Environ[str] | dict[str, str] = os.environ) -> dict[str, str]:
    """The engine process's own environment: paths and locale, litellm's import-time settings, no keys."""
    kept = {name: environ[name] for name in ENGINE_ENV if name in environ}
    kept.update(import_settings(environ))
    return kept


def make_private_dir(directory: Path) -> None:
    """Create ``directory`` (0700); EngineUnsafe when it exists but another user owns it or others may enter."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private(directory, want_dir=True)


def check_private(path: Path, *, want_dir: bool) -> None:
    """EngineUnsafe unless ``path`` is this user's own (not a symlink) and nobody else may use it."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise EngineUnsafe(f"{path}: {exc.strerror}") from exc
    kind_ok = stat.S_ISDIR(info.st_mode) if want_dir else stat.S_ISSOCK(info.st_mode)
    if not kind_ok:
        raise EngineUnsafe(f"{path} is not a {'directory' if want_dir else 'socket'}")
    if info.st_uid != os.getuid():
        raise EngineUnsafe(f"{path} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o077:
        raise EngineUnsafe(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})")

