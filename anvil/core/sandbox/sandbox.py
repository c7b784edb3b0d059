"""The sandbox a session's commands run in: its mode, whether this machine has one, and launching into it.

``[sandbox] mode``: ``auto`` (on where the OS supports it, a one-line notice where not), ``required`` (no
command runs without it: :class:`SandboxUnavailable`), ``off``. bubblewrap on Linux, sandbox-exec on macOS.

Landlock is not used as a fallback where bubblewrap is missing: it can only grant access to whole trees, so
the read-only islands inside the writable project (``.anvil/config.toml``, ``.git/hooks``) cannot be
expressed, and it has no pid namespace. A weaker sandbox under the same "sandboxed" label would mislead.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.sandbox.blocked import Block, find_block
from anvil.core.sandbox.bwrap import BwrapSupport, bwrap_argv, find_bwrap
from anvil.core.sandbox.lifetime import TAG_VARIABLE
from anvil.core.sandbox.limits import ProcessLimit
from anvil.core.sandbox.placeholders import Placeholders
from anvil.core.sandbox.places import Mount, MountPlan, Places, SandboxMode, SandboxSettings, plan_mounts
from anvil.core.sandbox.proxy import PROXY_PORT, HostProxy
from anvil.core.sandbox.seatbelt import seatbelt_argv, seatbelt_available, seatbelt_profile

INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap)"


class SandboxUnavailable(Exception):
    """``mode = "required"`` and there is no sandbox here; the message says why and what to do."""


@dataclass(frozen=True)
class SandboxStatus:
    mode: SandboxMode
    #: "bubblewrap" or "sandbox-exec" when commands are sandboxed
    mechanism: str | None
    #: why there is no sandbox, when the mode wants one
    problem: str | None = None
    network: bool = False
    hosts: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.mechanism is not None

    @property
    def label(self) -> str:
        """A few words for a status bar."""
        if self.active:
            return "sandboxed"
        return "sandbox off" if self.mode == "off" else "not sandboxed"

    @property
    def network_label(self) -> str:
        if self.hosts:
            return "network: " + ", ".join(self.hosts)
        return "network on" if self.network else "no network"

    def notice(self) -> str | None:
        """One line for the person when commands will not be sandboxed although the mode wanted it."""
        if self.active or self.mode == "off":
            return None
        if self.mode == "required":
            return f"No command will run: [sandbox] mode = \"required\" and {self.problem}; {INSTALL_HINT}."
        return (f"Commands run without a sandbox: {self.problem}. To sandbox them, {INSTALL_HINT}; "
                "[sandbox] mode = \"off\" silences this.")

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "active": self.active, "mechanism": self.mechanism, "problem": self.problem,
                "network": list(self.hosts) if self.hosts else self.network}


@dataclass
class Launch:
    """One command on its way into the sandbox (or not): what to run, and what to read its refusals with."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    #: the value of ANVIL_PROCESS_TAG in every process the command starts
    tag: str
    plan: MountPlan | None = None
    started: float = field(default_factory=time.monotonic)


class Sandbox:
    """A session's sandbox. Created by the runtime from the settings; tools reach it as ``ctx.sandbox``."""

    def __init__(self, settings: SandboxSettings, places: Places, *, session_id: str = "session",
                 environ: Mapping[str, str] | None = None, bwrap: BwrapSupport | None = None,
                 shown: tuple[Path, ...] = ()) -> None:
        self.settings = settings
        #: directories the caller's own commands read that the private temp dir would hide (anvil eval's checks
        #: compare with the task's folder): bound read-only at their place; never writable
        self.shown = shown
        self.places = places
        self.session_id = session_id
        self.environ = os.environ if environ is None else environ
        self._bwrap: BwrapSupport | None = None
        self.status = self._detect(bwrap)
        self._base: Path | None = None
        self._seq = 0
        self._proxy: HostProxy | None = None
        self._placeholders: Placeholders | None = None
        self.process_limit = ProcessLimit(settings.max_processes, session_id)

    @classmethod
    def disabled(cls, root: Path, session_id: str = "session") -> Sandbox:
        """No sandbox (mode "off"): what a tool context has when nobody configured one."""
        return cls(SandboxSettings(mode="off"), Places(root), session_id=session_id)

    def _detect(self, bwrap: BwrapSupport | None) -> SandboxStatus:
        s = self.settings
        if s.mode == "off":
            return SandboxStatus("off", None, network=True)
        if sys.platform == "darwin":
            problem = seatbelt_available()
            return SandboxStatus(s.mode, None if problem else "sandbox-exec", problem, s.network, s.hosts)
        if not sys.platform.startswith("linux"):
            return SandboxStatus(s.mode, None, f"there is no sandbox for {sys.platform}", s.network, s.hosts)
        self._bwrap = bwrap or find_bwrap()
        problem = self._bwrap.problem
        return SandboxStatus(s.mode, None if problem else "bubblewrap", problem, s.network, s.hosts)

    @property
    def active(self) -> bool:
        return self.status.active

    # -- files of its own ---------------------------------------------------------------------------------

    @property
    def base(self) -> Path:
        """A private directory for this session (0700): the sandbox's temp dir and the proxy's socket."""
        if self._base is None:
            self._base = Path(tempfile.mkdtemp(prefix="anvil-sandbox-"))
            (self._base / "tmp").mkdir(mode=0o1777)
            os.chmod(self._base / "tmp", 0o1777)  # a temp dir as programs expect it (mkdir obeys the umask)
        return self._base

    def temp_file(self, prefix: str, sandboxed: bool) -> tuple[Path, str]:
        """A new empty file both anvil and the command can reach: (its path for anvil, its path in the command)."""
        if not (sandboxed and self.active) or not self._temp_dirs():
            fd, name = tempfile.mkstemp(prefix=prefix)
            os.close(fd)
            return Path(name), name
        fd, name = tempfile.mkstemp(prefix=prefix, dir=self.base / "tmp")
        os.close(fd)
        return Path(name), str(self._temp_dirs()[0] / Path(name).name)

    def _temp_dirs(self) -> list[Path]:
        from anvil.core.sandbox.places import temp_dirs

        return temp_dirs(self.environ)

    # -- launching ----------------------------------------------------------------------------------------

    async def launch(self, command: Sequence[str], cwd: Path, *, sandboxed: bool = True,
                     env: Mapping[str, str] | None = None) -> Launch:
        """How to start ``command`` in ``cwd``: in the sandbox unless ``sandboxed`` is False (the person agreed)
        or there is none. Raises :class:`SandboxUnavailable` when the mode requires one and there is none."""
        self._seq += 1
        run_env = dict(os.environ if env is None else env)
        tag = f"{self.session_id}:{self._seq}"
        run_env[TAG_VARIABLE] = tag
        if sandboxed and not self.active and self.status.mode == "required":
            raise SandboxUnavailable(unavailable_message(self.status))
        if not (sandboxed and self.active):
            return Launch(list(command), run_env, False, tag)
        # anvil's own Python (a virtualenv under /tmp, as a checkout's CI makes) and the caller's folders stay
        # visible under the private temp dir, read-only; a whole temp dir shown would undo the private one
        own = (Path(sys.prefix), Path(sys.base_prefix))
        extra = [mount for path in dict.fromkeys((*own, *self.shown)) if path.resolve() not in self._temp_dirs()
                 for mount in self._shown(path)]
        if self.settings.hosts:
            command = await self._through_proxy(command, run_env, extra)
        plan = plan_mounts(self.places, self.settings, self.base / "tmp", self.environ, extra=extra)
        if plan.placeholders:
            self._placeholders_for_session().make(plan.placeholders)
        network = self.settings.network and not self.settings.hosts
        if self.status.mechanism == "bubblewrap":
            assert self._bwrap is not None
            argv = bwrap_argv(self._bwrap, plan, network=network, cwd=cwd, command=command)
        else:
            profile = seatbelt_profile(plan, network=network, temp_dirs=plan.temp_dirs)
            argv = seatbelt_argv(profile, command)
        return Launch(self.process_limit.wrap(argv), run_env, True, tag, plan)

    async def _through_proxy(self, command: Sequence[str], env: dict[str, str], extra: list[Mount]) -> list[str]:
        if self._proxy is None:
            self._proxy = HostProxy(self.settings.hosts)
        if self.status.mechanism == "sandbox-exec":
            port = await self._proxy.start_tcp()
            _set_proxy_env(env, port)
            return list(command)
        socket_dir = self.base / "proxy"
        socket_dir.mkdir(mode=0o700, exist_ok=True)
        await self._proxy.start_unix(socket_dir / "proxy.sock")
        inside = self._temp_dirs()[0] / ".anvil-proxy"
        extra.append(Mount("ro-bind", inside, socket_dir))
        _set_proxy_env(env, PROXY_PORT)
        forwarder = Path(__file__).with_name("forwarder.py")
        extra += self._shown(forwarder.parent)  # anvil's Python is shown already (launch)
        return [sys.executable, "-I", "-S", str(forwarder), str(inside / "proxy.sock"), "--", *command]

    def _shown(self, path: Path) -> list[Mount]:
        """A directory of anvil's own (its package, its Python) that the private temp dir would hide, as with a
        checkout or a virtualenv under /tmp: bound read-only at its place, so the sandbox still sees it."""
        real = path.resolve()
        for tmp in self._temp_dirs():
            if real == tmp or tmp in real.parents:
                return [Mount("ro-bind", real, real)]
        return []

    def _placeholders_for_session(self) -> Placeholders:
        if self._placeholders is None:
            state = self.places.data_dir / "sandbox" if self.places.data_dir else self.base
            self._placeholders = Placeholders(state, self.places.root)
            self._placeholders.hold()
        return self._placeholders

    def find_block(self, launch: Launch, output: str, cwd: Path) -> Block | None:
        """What the sandbox refused this command, if its output shows it."""
        if not launch.sandboxed:
            return None
        refused = self._proxy.refused_since(launch.started) if self._proxy is not None else []
        cap = self.process_limit.max_processes if self.process_limit.mechanism else None
        return find_block(output, launch.plan, cwd=cwd, network=self.settings.network and not self.settings.hosts,
                          process_cap=cap,
                          refused_hosts=refused)

    async def close(self) -> None:
        """The session ends: the proxy stops, the private temp dir goes."""
        if self._proxy is not None:
            await self._proxy.close()
        if self._placeholders is not None:
            self._placeholders.close()
        self.process_limit.close()
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None


def _set_proxy_env(env: dict[str, str], port: int) -> None:
    url = f"http://127.0.0.1:{port}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[name] = url
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"


def unavailable_message(status: SandboxStatus) -> str:
    return (f"Not run: [sandbox] mode = \"required\" and there is no sandbox here ({status.problem}). The person "
            f"can {INSTALL_HINT}, or set [sandbox] mode = \"auto\" to run commands without one.")

