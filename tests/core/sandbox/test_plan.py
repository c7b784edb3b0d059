"""The mount plan, the bubblewrap command line and the macOS profile built from it, and reading refusals out of
a command's output: pure functions, checked on their text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from anvil.core.sandbox.blocked import find_block
from anvil.core.sandbox.bwrap import BwrapSupport, bwrap_argv
from anvil.core.sandbox.places import MountPlan, Places, SandboxSettings, cache_dirs, plan_mounts
from anvil.core.sandbox.seatbelt import quote, seatbelt_profile


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "work" / "project"
    (project / ".anvil" / "jobs").mkdir(parents=True)
    (project / ".anvil" / "config.toml").write_text("")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def plan(root: Path, tmp_path: Path, **settings: object) -> MountPlan:
    places = Places(root, allowed_dirs=(tmp_path / "work",), config_dir=tmp_path / "work" / "cfg",
                    data_dir=tmp_path / "elsewhere", home=tmp_path / "home")
    return plan_mounts(places, SandboxSettings(writable_caches=False, **settings), tmp_path / "private",  # type: ignore[arg-type]
                       env={"TMPDIR": str(tmp_path)})


def test_read_only_islands_sit_on_top_of_the_writable_roots(root: Path, tmp_path: Path) -> None:
    p = plan(root, tmp_path)
    order = [(m.kind, m.role, m.dest) for m in p.mounts]
    work = tmp_path / "work"
    assert ("bind", "", work) in order  # the allowed dir holds the project: the project is not bound twice
    assert ("ro-bind", "", root / ".anvil") in order and ("bind", "reopen", root / ".anvil" / "jobs") in order
    assert ("ro-bind", "", root / ".git" / "config") in order and ("ro-bind", "", root / ".git" / "hooks") in order
    for pinned in (root, root / ".git"):  # directories on the way cannot be renamed away
        assert ("bind", "pin", pinned) in order
    depths = [len(m.dest.parts) for m in p.mounts]
    assert depths == sorted(depths)  # a shallower mount made later would hide a deeper one
    git = root / ".git"  # what git reads that `git init` did not make: stand-ins, read-only like the rest
    assert sorted(p.placeholders) == sorted([(work / "cfg", "dir"), (git / "commondir", "pointer"),
                                             *((git / d, "dir") for d in ("modules", "worktrees", "remotes"))])
    for name in ("info", "branches", "commondir", "modules", "worktrees", "remotes"):
        assert ("ro-bind", "", git / name) in order
    for writable in ("objects", "refs", "logs", "index", "HEAD"):
        assert not any(m.dest == git / writable for m in p.mounts)  # git's everyday work stays writable
    assert tmp_path / "elsewhere" not in p.protected  # not writable anyway: nothing to add


def test_temp_dirs_are_the_private_one_and_run_is_hidden(root: Path, tmp_path: Path) -> None:
    p = plan(root, tmp_path)
    binds = {m.dest: m.src for m in p.mounts if m.kind == "bind"}
    assert binds[Path("/tmp")] == tmp_path / "private" and binds[tmp_path] == tmp_path / "private"
    assert any(m.kind == "tmpfs" and m.dest == Path("/run") for m in p.mounts)


def test_caches_never_include_directories_of_programs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for d in (".cache", ".npm", ".cargo/registry", ".cargo/git", ".cargo/bin", "go/pkg/mod", "go/bin"):
        (home / d).mkdir(parents=True)
    found = cache_dirs(home, {})
    assert found == [home / ".cache", home / ".npm", home / ".cargo/registry", home / ".cargo/git",
                     home / "go/pkg/mod"]


def test_the_bubblewrap_command_line(root: Path, tmp_path: Path) -> None:
    p = plan(root, tmp_path)
    argv = bwrap_argv(BwrapSupport("/usr/bin/bwrap", disable_userns=True), p, network=False, cwd=root,
                      command=["bash", "-c", "true"])
    text = " ".join(argv)
    for flag in ("--die-with-parent", "--unshare-pid", "--unshare-net", "--cap-drop ALL", "--disable-userns",
                 "--ro-bind / /", "--dev /dev", "--proc /proc", f"--chdir {root} -- bash -c true"):
        assert flag in text
    assert text.index("--ro-bind / /") < text.index("--tmpfs /run") < text.index(f"--ro-bind {root}/.anvil ")
    networked = bwrap_argv(BwrapSupport("/usr/bin/bwrap"), p, network=True, cwd=root, command=["true"])
    assert "--unshare-net" not in networked and "--disable-userns" not in networked


def test_the_macos_profile(root: Path, tmp_path: Path) -> None:
    p = plan(root, tmp_path)
    profile = seatbelt_profile(p, network=False, temp_dirs=[Path("/private/var/folders/x/T")])
    lines = profile.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]  # what is not allowed below is refused
    allow = profile.index("(allow file-write*")
    deny = profile.index("(deny file-write*\n")
    assert allow < deny  # later rules win: the islands come last
    assert f"  (subpath {quote(tmp_path / 'work')})" in profile[allow:deny]
    assert f"  (subpath {quote(root / '.git' / 'hooks')})" in profile[deny:]
    assert f"  (subpath {quote(root / '.git' / 'commondir')})" in profile[deny:]
    assert f"  (literal {quote(root / '.git')})" in profile[deny:]  # no renaming .git away
    assert f"  (subpath {quote(tmp_path / 'work' / 'cfg')})" in profile[deny:]  # protected before it exists
    launchers = profile[profile.index("(deny process-exec"):]
    for program in ("/bin/launchctl", "/usr/bin/open", "/usr/bin/osascript"):  # they would run work outside
        assert f"  (literal {quote(program)})" in launchers[:launchers.index("\n)\n")]
    services = profile[profile.index("(allow mach-lookup"):]
    services = services[:services.index("\n)\n")]
    assert "com.apple.system.opendirectoryd.libinfo" in services
    assert "launchservicesd" not in profile and "appleevents" not in profile
    assert "(allow network-outbound (remote ip))" not in profile and '(remote ip "localhost:*")' in profile
    assert "(allow default)" not in profile and "(allow network-outbound)\n" not in profile
    networked = seatbelt_profile(p, network=True)
    assert "(allow network-outbound (remote ip))" in networked and "mDNSResponder" in networked
    assert "com.apple.SystemConfiguration.configd" in networked and "configd" not in profile
    assert quote('a"b\\c') == '"a\\"b\\\\c"'


@pytest.mark.parametrize(("line", "path"), [
    ("touch: cannot touch '/etc/x': Read-only file system", "/etc/x"),
    ("bash: line 1: /etc/x: Read-only file system", "/etc/x"),
    ("OSError: [Errno 30] Read-only file system: '/usr/lib/x.so'", "/usr/lib/x.so"),
    ("mkdir: cannot create directory ‘/opt/tool’: Read-only file system", "/opt/tool"),
])
def test_a_write_outside_is_named(root: Path, tmp_path: Path, line: str, path: str) -> None:
    block = find_block(f"starting\n{line}\n", plan(root, tmp_path), cwd=root, network=False)
    assert block is not None and block.summary.startswith(f"Blocked by the sandbox: the write to {path} is outside")


def test_git_refusing_to_rewrite_its_config_is_named(root: Path, tmp_path: Path) -> None:
    line = "error: could not write config file .git/config: Device or resource busy"
    block = find_block(line, plan(root, tmp_path), cwd=root, network=False)
    assert block is not None and block.summary == f"Blocked by the sandbox: {root}/.git/config is read-only inside " \
                                                  "the sandbox."
    assert "git reads its configuration, hooks and pointers" in block.advice


def test_output_without_a_refusal_is_left_alone(root: Path, tmp_path: Path) -> None:
    p = plan(root, tmp_path)
    assert find_block("FAILED test_x.py::test_y - AssertionError", p, cwd=root, network=False) is None
    assert find_block("umount: /mnt: target is busy (Device or resource busy)", p, cwd=root, network=False) is None
    assert find_block("curl: (6) Could not resolve host: pypi.org", p, cwd=root, network=True) is None
    network = find_block("curl: (6) Could not resolve host: pypi.org", p, cwd=root, network=False)
    assert network is not None and network.summary == "Blocked by the sandbox: commands have no network access."


def test_placeholders_go_with_the_last_session_in_the_project(tmp_path: Path) -> None:
    from anvil.core.sandbox.placeholders import Placeholders

    root = tmp_path / "p"
    root.mkdir()
    first, second = Placeholders(tmp_path / "state", root), Placeholders(tmp_path / "state", root)
    first.hold()
    first.make([(root / ".git", "dir")])
    second.hold()
    first.close()
    assert (root / ".git").is_dir()  # the second session's sandboxes still stand on it
    second.close()
    assert not (root / ".git").exists()
    crashed = Placeholders(tmp_path / "state", root)
    crashed.hold()
    crashed.make([(root / ".anvil", "dir")])
    crashed._release()  # a session that died without closing: its placeholder stays in the ledger...
    later = Placeholders(tmp_path / "state", root)
    later.hold()
    later.close()
    assert not (root / ".anvil").exists()  # ...and the next session to end removes it


def test_anvils_python_and_the_callers_folders_under_tmp_stay_readable(root: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The private temp dir hides /tmp; a virtualenv anvil runs from there (a CI checkout) and the folders a
    caller shows (anvil eval's task folder) are bound read-only at their place; a whole temp dir never is."""
    import asyncio
    import sys
    import tempfile

    from anvil.core.sandbox.sandbox import Sandbox

    with tempfile.TemporaryDirectory(dir="/tmp") as venv, tempfile.TemporaryDirectory(dir="/tmp") as task:
        monkeypatch.setattr(sys, "prefix", venv)
        places = Places(root, data_dir=tmp_path / "data")
        sandbox = Sandbox(SandboxSettings(mode="auto"), places, environ={"PATH": "/usr/bin"},
                          bwrap=BwrapSupport("/usr/bin/bwrap"), shown=(Path(task), Path("/tmp")))
        try:
            launch = asyncio.run(sandbox.launch(["true"], root))
        finally:
            asyncio.run(sandbox.close())
        text = " ".join(launch.argv)
        assert launch.sandboxed
        assert f"--ro-bind {Path(venv).resolve()} {Path(venv).resolve()}" in text
        assert f"--ro-bind {Path(task).resolve()} {Path(task).resolve()}" in text
        assert "--ro-bind /tmp /tmp" not in text
