"""ripgrep: finding the ``rg`` binary, running it without blocking the event loop, and building
its arguments and reading its output for the search tools.

The ``ripgrep`` wheel (a dependency) installs ``rg`` into the environment's scripts directory,
which is not on PATH when anvil is started by absolute path (``/opt/anvil/bin/anvil``) or from
a venv that was never activated, so that directory is looked at before PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from anvil.core.tools.search.ignore import ALWAYS_SKIPPED

_EXE = "rg.exe" if os.name == "nt" else "rg"

#: rg's stdout beyond this is not read: the model sees a few thousand characters of it anyway, and
#: a pattern like ``e`` over a monorepo would otherwise fill memory. The caller says it was cut.
DEFAULT_MAX_BYTES = 32 * 1024 * 1024

class RgTimeout(Exception):
    """rg ran longer than its time limit and was stopped."""


@dataclass(frozen=True)
class RgOutput:
    returncode: int
    stdout: bytes
    stderr: str
    #: stdout went past ``max_bytes`` and rg was stopped: the results are incomplete.
    truncated: bool = False


@functools.cache
def find_rg() -> str | None:
    """The path of the rg binary, or None when there is none (the tools then use their fallback)."""
    candidates = [
        # Not resolved: a venv's python is usually a symlink to the system one, and the venv's bin
        # directory, not the system's, is where the wheel put rg.
        Path(sys.executable).parent / _EXE,
        Path(sysconfig.get_path("scripts")) / _EXE,
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


class _Collector(asyncio.SubprocessProtocol):
    """Gathers rg's output as the event loop receives it: chunks kept as they come (no stream
    buffer copying them again), and rg killed as soon as its output passes ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        loop = asyncio.get_running_loop()
        self.max_bytes = max_bytes
        self.chunks: list[bytes] = []
        self.size = 0
        self.stderr = bytearray()
        self.truncated = False
        self.transport: asyncio.SubprocessTransport | None = None
        self.exited: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()  # exited, and both pipes closed
        self._open_pipes = {1, 2}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            if len(self.stderr) < 16_384:  # drained to the end so rg never blocks; the start is kept
                self.stderr += data
        elif not self.truncated:
            self.chunks.append(data)
            self.size += len(data)
            if self.size >= self.max_bytes:
                self.truncated = True
                self.kill()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open_pipes.discard(fd)
        self._check()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self._check()

    def _check(self) -> None:
        if self.exited.done() and not self._open_pipes and not self.finished.done():
            self.finished.set_result(None)

    def kill(self) -> None:
        if self.transport is not None and self.transport.get_returncode() is None:
            with contextlib.suppress(ProcessLookupError):  # it may have exited on its own meanwhile
                self.transport.kill()


async def run_rg(args: list[str], cwd: Path, *, timeout: float,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> RgOutput:
    """Run ``rg args`` in ``cwd`` and collect its output.

    The user's ripgrep config file is never read (``--no-config``): the tools' output format and
    filters must not change with someone's ``RIPGREP_CONFIG_PATH``. stdin is /dev/null so rg can
    never decide to search it. On timeout, cancellation or an over-long output the process is killed.
    """
    rg = find_rg()
    if rg is None:
        raise FileNotFoundError("ripgrep (rg) is not installed")
    loop = asyncio.get_running_loop()
    transport, collector = await loop.subprocess_exec(
        lambda: _Collector(max_bytes), rg, "--no-config", *args, cwd=cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        # Shielded: a timeout must not cancel the future the protocol will still resolve.
        await asyncio.wait_for(asyncio.shield(collector.finished), timeout)
    except TimeoutError:
        raise RgTimeout(f"rg did not finish within {timeout:g}s") from None
    finally:
        try:
            if transport.get_returncode() is None:
                collector.kill()
                await collector.exited  # reaped before we return, even when cancelled
        finally:
            transport.close()
    return RgOutput(transport.get_returncode() or 0, b"".join(collector.chunks),
                    collector.stderr.decode("utf-8", errors="replace"), collector.truncated)


# --- speaking rg's language -------------------------------------------------------------------

#: Passed to every run. ``--no-require-git``: .gitignore is respected outside git repositories too
#: (a fresh project, an unpacked tarball). ``--hidden`` then ``!.git``: dotfiles are searched, but
#: never the .git directory (or a worktree's .git file). Dependency, virtualenv and cache
#: directories are excluded even when not gitignored; a path inside one still works, since rg
#: never filters the paths it is given, only what it finds below them.
COMMON_ARGS: tuple[str, ...] = (
    "--null", "--hidden", "--no-require-git", "--color=never", "--glob=!.git",
    *(f"--glob=!{name}/" for name in sorted(ALWAYS_SKIPPED - {".git"})),
)

GrepMode = Literal["files_with_matches", "content", "count"]

#: One line of content output: (line number, is a match (not context), text). Line number 0 is a
#: break between non-adjacent groups (printed as ``--``).
Line = tuple[int, bool, str]

_LINE = re.compile(rb"([0-9]+)([:-])")
_MATCH_LINE = re.compile(rb"(?:^|\0)[0-9]+:", re.MULTILINE)
_WILDCARD = re.compile(r"[*?\[{\\]")


def glob_filter(glob: str) -> tuple[str, list[str]]:
    """rg arguments selecting files by ``glob`` without overriding .gitignore, and the literal
    directory the glob starts with, to search instead of the original one.

    rg's ``--glob`` whitelist beats ignore rules for files (``-g '*.py'`` lists a gitignored
    ``secret.py``); a file type does not, and matches file names. So '*.py' becomes a type,
    'src/**/*.py' becomes directory src plus type '*.py', and 'src/*.py' adds --max-depth=1.
    The rare globs that do not split so ('src/*/index.ts', '!*.md', a ':' that a type definition
    cannot hold) are passed as --glob.
    """
    if glob.startswith("!") or ":" in glob:
        return "", [f"--glob={glob}"]
    if "/" not in glob.rstrip("/"):  # a name at any depth ('/x' is anchored: handled below)
        return "", ["--type-add=anvilglob:" + glob.rstrip("/"), "--type=anvilglob"]
    segments = glob.strip("/").split("/")
    literal: list[str] = []
    while len(segments) > 1 and not _WILDCARD.search(segments[0]) and segments[0] not in ("", ".", ".."):
        literal.append(segments.pop(0))
    directory = "/".join(literal)
    if segments == ["**"]:
        return directory, []
    if len(segments) == 1:
        return directory, ["--type-add=anvilglob:" + segments[0], "--type=anvilglob", "--max-depth=1"]
    if len(segments) == 2 and segments[0] == "**" and "/" not in segments[1]:
        return directory, ["--type-add=anvilglob:" + segments[1], "--type=anvilglob"]
    return directory, [f"--glob={'/'.join(segments)}"]  # after the excludes: a later glob wins in rg


def grep_args(pattern: str, target: str, *, mode: GrepMode, filters: list[str], ignore_case: bool,
              context: int) -> list[str]:
    args = [*COMMON_ARGS, "--with-filename", *filters]
    if ignore_case:
        args.append("--ignore-case")
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count":
        args.append("--count")
    else:
        # --heading prints each file's path once before its lines: the output can be split and
        # sorted per file without looking at every line.
        args += ["--line-number", "--heading"]
        if context:
            args.append(f"--context={context}")
    return [*args, f"--regexp={pattern}", "--", target]


def files_args(filters: list[str], target: str) -> list[str]:
    return [*COMMON_ARGS, "--files", *filters, "--", target]


# The parsers take rg's output for a search of "./something", so every path starts with "./": it is
# replaced by ``prefix``, the searched directory as the model sees it. Paths are decoded one by one,
# with replacement for undecodable bytes; content stays bytes, and is decoded only where shown.

def split_paths(out: bytes, prefix: str) -> list[str]:
    """Paths from ``--files`` / ``--files-with-matches`` output (NUL-terminated with --null)."""
    text = out.decode("utf-8", errors="replace")
    paths = ("\0" + text).replace("\0./", "\0" + prefix).split("\0")
    if paths[-1] == "":
        paths.pop()
    return paths[1:]


def split_counts(out: bytes, prefix: str) -> list[tuple[str, int]]:
    """(path, matching lines) pairs from ``--count`` output."""
    text = ("\n" + out.decode("utf-8", errors="replace")).replace("\n./", "\n" + prefix)
    pairs = []
    for line in text.split("\n"):
        path, _, count = line.rpartition("\0")
        if path and count.isdigit():  # not so for a last line cut short with the output
            pairs.append((path, int(count)))
    return pairs


def split_blocks(out: bytes, prefix: str) -> list[tuple[str, int, int]]:
    """``(path, start, end)`` per file from ``--heading --null`` output: ``out[start:end]`` is the
    file's lines, ``N:text`` (match), ``N-text`` (context) or ``--`` (break). Files are separated by
    a blank line. Offsets, not copies: most files' lines are only counted, never shown."""
    # Each path ends with the only NUL of its block: finding NULs (memchr) and then the newline
    # before each one (memrchr over the path only) is several times faster than finding the blank
    # lines, which would scan every line twice.
    starts: list[int] = []
    nuls: list[int] = []
    pos = 0
    while (nul := out.find(b"\0", pos)) >= 0:
        starts.append(out.rfind(b"\n", pos, nul) + 1)
        nuls.append(nul)
        pos = nul + 1
    if not nuls:
        return []
    # All paths decoded in one go, which is much faster than one by one.
    paths = split_paths(b"\0".join(out[a:b] for a, b in zip(starts, nuls, strict=True)) + b"\0", prefix)
    ends = [start - 1 for start in starts[1:]] + [len(out)]  # a block ends before the blank line
    return list(zip(paths, [nul + 1 for nul in nuls], ends, strict=True))


def count_block_matches(out: bytes, start: int, end: int, context: int) -> int:
    if not context:  # every line is a match: counting newlines is much faster than a regex
        return out.count(b"\n", start, end) + (end > start and out[end - 1] != 10)
    # From the NUL before the lines, which stands where "^" cannot: it ends the path.
    return len(_MATCH_LINE.findall(out, start - 1, end))


def parse_block(out: bytes, start: int, end: int) -> list[Line]:
    lines: list[Line] = []
    for raw in out[start:end].split(b"\n"):
        if raw == b"--":
            lines.append((0, False, ""))
            continue
        m = _LINE.match(raw)
        if m is None:  # the empty string after the last newline, or a line cut with the output
            continue
        lines.append((int(m[1]), m[2] == b":", raw[m.end():].decode("utf-8", errors="replace")))
    return lines
