"""Ways out of the sandbox an attacker tried, each end to end in a real bubblewrap sandbox: pointing git at
configuration the model wrote (``.git/commondir`` and the rest of what git reads), the kernel's knobs in
``/proc``, scripts that hooks run outside the sandbox, and a fork bomb. Everyday git work must keep working."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from anvil.core.sandbox.places import Places
from tests.core.sandbox.conftest import MakeCtx, linux_only, run

pytestmark = linux_only
GIT_ID = "-c user.name=a -c user.email=a@b"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", *args], cwd=root,
                          capture_output=True, text=True, check=False)


@pytest.fixture
def repo(places: Places) -> Path:
    """The project as a git repository with one commit, and a configuration file the model wrote (evil/config,
    whose fsmonitor would run a program as soon as git reads it)."""
    root = places.root
    _git(root, "init", "-q")
    (root / ".gitignore").write_text(".anvil/\nupstream/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    evil = root / "evil"
    for part in ("refs/heads", "objects"):
        (evil / part).mkdir(parents=True)
    (evil / "config").write_text(f'[core]\n\tfsmonitor = "touch {root}/ESCAPED; false"\n')
    return root


async def test_everyday_git_work_runs_in_the_sandbox(make_ctx: MakeCtx, repo: Path) -> None:
    upstream = repo / "upstream"  # the host's temp dir is not the sandbox's
    subprocess.run(["git", "clone", "-q", str(repo), str(upstream)], check=True)
    (upstream / "new.txt").write_text("from upstream\n")
    _git(upstream, "add", "new.txt")
    _git(upstream, "commit", "-qm", "upstream change")
    ctx = make_ctx()
    steps = [f"echo one > a.txt && git add a.txt && git {GIT_ID} commit -qm second",
             "git checkout -qb feature && git branch --show-current",
             f"echo two >> a.txt && git {GIT_ID} stash -q && git stash list && git {GIT_ID} stash pop -q",
             f"git fetch -q {upstream} HEAD && git log --oneline FETCH_HEAD -1",
             f"git {GIT_ID} commit -qam third && git log --oneline | wc -l"]
    for step in steps:
        result = await run(ctx, step)
        assert result.ok, (step, result.output)
    assert _git(repo, "log", "--oneline").stdout.count("\n") == 3
    assert _git(repo, "branch", "--show-current").stdout.strip() == "feature"
    assert "upstream change" in _git(repo, "log", "--oneline", "FETCH_HEAD", "-1").stdout
    assert (repo / "a.txt").read_text() == "one\ntwo\n"


@pytest.mark.parametrize("attack", [
    "echo ../evil > .git/commondir",  # git would read evil/config: the audit's escape
    "mkdir -p .git/worktrees/w && echo ../../../evil > .git/worktrees/w/commondir",
    "mkdir -p .git/modules/sub && cp evil/config .git/modules/sub/config",
    "echo '* filter=x' > .git/info/attributes",
    "cp evil/config .git/config",
    "printf '#!/bin/sh\\ntouch ESCAPED\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "echo 'URL: ../evil' > .git/remotes/origin",
    "rm -f .git/commondir && echo ../evil > .git/commondir",
    "mv .git/commondir .git/old && echo ../evil > .git/commondir",
])
async def test_what_git_reads_as_configuration_cannot_be_changed(make_ctx: MakeCtx, repo: Path,
                                                                 attack: str) -> None:
    before = {p: p.read_bytes() for p in (repo / ".git").glob("*") if p.is_file()}
    result = await run(make_ctx(), attack)
    assert not result.ok and result.output.startswith("Blocked by the sandbox"), result.output
    for path, content in before.items():
        assert path.read_bytes() == content, path
    status = _git(repo, "status", "--porcelain")  # git outside the sandbox, as the person runs it
    assert status.returncode == 0 and not (repo / "ESCAPED").exists()
    assert not (repo / ".git" / "worktrees" / "w").exists() and not (repo / ".git" / "modules" / "sub").exists()


async def test_the_stand_ins_leave_git_working_and_go_at_the_end(make_ctx: MakeCtx, repo: Path) -> None:
    ctx = make_ctx()
    await run(ctx, "true")
    commondir = repo / ".git" / "commondir"
    assert commondir.read_text() == ".\n"  # points at its own directory: git reads it as .git itself
    assert _git(repo, "status", "--porcelain").returncode == 0
    assert _git(repo, "commit", "-q", "--allow-empty", "-m", "outside").returncode == 0
    assert _git(repo, "rev-parse", "--git-common-dir").stdout.strip() == str(repo / ".git")
    await ctx.close()
    assert not commondir.exists() and not (repo / ".git" / "worktrees").exists()
    assert not (repo / ".git" / "modules").exists()


async def test_the_kernels_knobs_are_read_only(make_ctx: MakeCtx) -> None:
    """Root in the sandbox (even without capabilities) could write /proc/sys/kernel/core_pattern, which names a
    program the kernel runs as root outside every namespace. Opened for writing only, never written to."""
    probe = ("import os\nfor p in ('/proc/sys/kernel/core_pattern', '/proc/sys/vm/drop_caches', "
             "'/proc/sysrq-trigger'):\n    try:\n        os.close(os.open(p, os.O_WRONLY))\n        print('OPEN', p)\n"
             "    except OSError as e:\n        print(e.errno, p)\n")
    result = await run(make_ctx(), f"python3 -c \"{probe}\"")
    assert "OPEN" not in result.output, result.output
    assert "30 /proc/sys/kernel/core_pattern" in result.output  # EROFS
    writable = make_ctx(writable=(Path("/proc/sys/kernel"), Path("/sys")))  # as a "Blocked" advice might tempt
    again = await run(writable, f"python3 -c \"{probe}\"")
    assert "OPEN" not in again.output and "30 /proc/sys/kernel/core_pattern" in again.output
    said = await run(writable, "python3 -c \"open('/proc/sys/kernel/core_pattern', 'a')\"")  # opened, not written
    assert said.output.startswith("Blocked by the sandbox: /proc/sys/kernel/core_pattern is one of the kernel's")


async def test_a_fork_bomb_stops_at_the_process_cap(make_ctx: MakeCtx) -> None:
    """A command that starts far more processes than the cap: the rest fail to start, the machine carries on."""
    ctx = make_ctx(max_processes=40)
    spawn = ("import subprocess\nn = 0\nfor _ in range(300):\n    try:\n        subprocess.Popen(['sleep', '5'])\n"
             "        n += 1\n    except OSError as e:\n        print('refused:', e.strerror)\n        break\nprint(n)")
    result = await run(ctx, f"python3 -c \"{spawn}\"")
    assert ctx.sandbox.process_limit.mechanism is not None
    assert "refused: Resource temporarily unavailable" in result.output, result.output
    assert int(result.output.split("refused: Resource temporarily unavailable")[1].split()[0]) < 40


async def test_a_real_fork_bomb_is_contained(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(max_processes=64)
    assert ctx.sandbox.process_limit.wrap(["true"]) != ["true"]  # the cap is in place before the bomb goes off
    result = await run(ctx, "bomb() { bomb | bomb & }; bomb; sleep 3", timeout=2)
    assert not result.ok
    assert result.output.startswith("Blocked by the sandbox: the command tried to have more than 64 processes"), \
        result.output[:300]
    after = await run(ctx, "echo still here")
    assert after.ok and "still here" in after.output


async def test_the_command_cannot_leave_its_cgroup(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(max_processes=64)
    result = await run(ctx, "cat /proc/self/cgroup; for f in /sys/fs/cgroup/cgroup.procs "
                            "/sys/fs/cgroup/pids/cgroup.procs; do [ -e $f ] && echo $$ > $f; done; echo done")
    assert "Read-only file system" in result.output or "Permission denied" in result.output, result.output


async def test_scripts_hooks_run_are_read_only(make_ctx: MakeCtx, places: Places) -> None:
    script = places.root / "scripts" / "setup.sh"
    script.parent.mkdir()
    script.write_text("echo setting up\n")
    at = Places(places.root, config_dir=places.config_dir, data_dir=places.data_dir, home=places.home,
                scripts=(script,))
    result = await run(make_ctx(at=at), "echo 'touch /tmp/pwned' >> scripts/setup.sh")
    assert script.read_text() == "echo setting up\n"
    assert result.output.startswith(f"Blocked by the sandbox: {script} is read-only"), result.output
    assert "outside the sandbox" in result.output
    other = await run(make_ctx(at=at), "echo x > scripts/other.sh && cat scripts/other.sh")
    assert other.ok


async def test_an_in_place_edit_of_a_protected_file_is_named(make_ctx: MakeCtx, places: Places) -> None:
    """`sed -i` renames a temp file over the original; the error names the temp file, the report the real one."""
    script = places.root / "scripts" / "setup.sh"
    script.parent.mkdir()
    script.write_text("echo setting up\n")
    at = Places(places.root, config_dir=places.config_dir, data_dir=places.data_dir, home=places.home,
                scripts=(script,))
    result = await run(make_ctx(at=at), "sed -i 's/setting/tearing/' scripts/setup.sh")
    assert script.read_text() == "echo setting up\n"
    assert result.output.startswith(f"Blocked by the sandbox: a read-only file could not be replaced ({script})")


def test_a_commands_cgroup_stays_until_its_command_could_have_entered_it() -> None:
    """Commands start side by side (a background job, parallel calls): the next launch must not remove a cgroup
    whose command has not entered it yet."""
    from anvil.core.sandbox.limits import ProcessLimit

    limit = ProcessLimit(10, f"race-{os.getpid()}")
    first = limit.wrap(["true"])
    if limit.mechanism != "cgroup":
        pytest.skip("no cgroup can be made here; RLIMIT_NPROC keeps no per-command state to race on")
    limit.wrap(["true"])
    group = Path(first[3]).parent
    assert group.is_dir() and (group / "pids.max").read_text().strip() == "10"
    limit.close()
    assert not group.exists() and not group.parent.exists()


def test_no_cgroup_is_left_behind() -> None:
    """Run last in this file: every session's cgroups went with it."""
    left = [p for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids"))
            for p in (base.glob(f"anvil-{os.getpid()}-*") if base.is_dir() else [])]
    assert left == []
