"""The ripgrep adapter: finding rg, running it without blocking, and reading its output."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anvil.core.tools.search import ripgrep
from anvil.core.tools.search.ripgrep import (
    RgTimeout,
    count_block_matches,
    find_rg,
    glob_filter,
    parse_block,
    run_rg,
    split_blocks,
    split_counts,
    split_paths,
)

needs_rg = pytest.mark.skipif(find_rg() is None, reason="no rg binary")


@pytest.fixture
def fresh_find_rg() -> Any:
    find_rg.cache_clear()
    yield find_rg
    find_rg.cache_clear()


def test_rg_next_to_the_interpreter_wins_over_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   fresh_find_rg: Any) -> None:
    venv_bin, path_bin = tmp_path / "venv" / "bin", tmp_path / "usr" / "bin"
    for directory in (venv_bin, path_bin):
        directory.mkdir(parents=True)
        (directory / "rg").write_text("#!/bin/sh\n")
        (directory / "rg").chmod(0o755)
    (venv_bin / "python").write_text("")
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(path_bin))
    assert fresh_find_rg() == str(venv_bin / "rg")
    assert fresh_find_rg() is fresh_find_rg()  # cached


def test_rg_on_path_when_not_beside_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    fresh_find_rg: Any) -> None:
    path_bin = tmp_path / "usr" / "bin"
    path_bin.mkdir(parents=True)
    (path_bin / "rg").write_text("#!/bin/sh\n")
    (path_bin / "rg").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    monkeypatch.setattr(ripgrep.sysconfig, "get_path", lambda name: str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(path_bin))
    assert fresh_find_rg() == str(path_bin / "rg")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    fresh_find_rg.cache_clear()
    assert fresh_find_rg() is None


@needs_rg
async def test_run_rg_collects_output_and_exit_code(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    found = await run_rg(["--files-with-matches", "needle", "."], tmp_path, timeout=30)
    assert (found.returncode, found.stdout, found.truncated) == (0, b"./a.txt\n", False)
    missing = await run_rg(["--files-with-matches", "nothing-here", "."], tmp_path, timeout=30)
    assert missing.returncode == 1 and missing.stdout == b""


@needs_rg
async def test_run_rg_ignores_the_users_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "rgrc"
    config.write_text("--files-without-match\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    (tmp_path / "a.txt").write_text("needle\n")
    out = await run_rg(["--files-with-matches", "needle", "a.txt"], tmp_path, timeout=30)
    assert out.stdout == b"a.txt\n"


@needs_rg
async def test_run_rg_stops_at_max_bytes(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("line\n" * 200_000)
    out = await run_rg(["--no-filename", "line", "big.txt"], tmp_path, timeout=30, max_bytes=10_000)
    assert out.truncated and 10_000 <= len(out.stdout) < 2_000_000


def _fifo_and_spy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[asyncio.SubprocessTransport]:
    # rg blocks reading a FIFO nobody writes to: a search that never ends, with no sleep involved.
    os.mkfifo(tmp_path / "never")
    started: list[asyncio.SubprocessTransport] = []
    loop = asyncio.get_running_loop()
    real = loop.subprocess_exec

    async def spy(*args: Any, **kwargs: Any) -> Any:
        transport, protocol = await real(*args, **kwargs)
        started.append(transport)
        return transport, protocol

    monkeypatch.setattr(loop, "subprocess_exec", spy)
    return started


@needs_rg
async def test_run_rg_timeout_kills_the_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = _fifo_and_spy(tmp_path, monkeypatch)
    with pytest.raises(RgTimeout):
        await run_rg(["x", "never"], tmp_path, timeout=0.3)
    assert started[0].get_returncode() is not None


@needs_rg
async def test_cancelling_run_rg_kills_the_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = _fifo_and_spy(tmp_path, monkeypatch)
    task = asyncio.create_task(run_rg(["x", "never"], tmp_path, timeout=60))
    while not started:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert started[0].get_returncode() is not None


@pytest.mark.parametrize(("glob", "expected"), [
    ("*.py", ("", ["--type-add=anvilglob:*.py", "--type=anvilglob"])),
    ("**/*.py", ("", ["--type-add=anvilglob:*.py", "--type=anvilglob"])),
    ("src/**/*.py", ("src", ["--type-add=anvilglob:*.py", "--type=anvilglob"])),
    ("src/lib/*.{ts,tsx}", ("src/lib", ["--type-add=anvilglob:*.{ts,tsx}", "--type=anvilglob", "--max-depth=1"])),
    ("/setup.py", ("", ["--type-add=anvilglob:setup.py", "--type=anvilglob", "--max-depth=1"])),
    ("docs/**", ("docs", [])),
    ("src/*/index.ts", ("src", ["--glob=*/index.ts"])),
    ("../x/*.py", ("", ["--glob=../x/*.py"])),
    ("!*.md", ("", ["--glob=!*.md"])),
])
def test_glob_filter(glob: str, expected: tuple[str, list[str]]) -> None:
    assert glob_filter(glob) == expected


def test_parsers() -> None:
    assert split_paths(b"./a.py\0./src/b c.py\0", "sub/") == ["sub/a.py", "sub/src/b c.py"]
    assert split_counts(b"./a.py\x003\n./b:c.py\x0012\n", "") == [("a.py", 3), ("b:c.py", 12)]
    out = b"./a.py\x001-x\n2:hit\n--\n9:hit\n\n./b-1.py\x004:hit:with:colons\n"
    blocks = split_blocks(out, "")
    assert [path for path, _, _ in blocks] == ["a.py", "b-1.py"]
    (_, a0, a1), (_, b0, b1) = blocks
    assert parse_block(out, a0, a1) == [(1, False, "x"), (2, True, "hit"), (0, False, ""), (9, True, "hit")]
    assert parse_block(out, b0, b1) == [(4, True, "hit:with:colons")]
    assert count_block_matches(out, a0, a1, context=1) == 2
    assert count_block_matches(out, b0, b1, context=0) == 1
    assert split_blocks(b"", "") == [] and split_paths(b"", "") == [] and split_counts(b"", "") == []


_TEXT = st.text(st.characters(blacklist_characters="\0\n\r", blacklist_categories=("Cs",)), max_size=12)


@given(st.lists(st.tuples(_TEXT.filter(bool), st.lists(st.tuples(st.integers(1, 9999), st.booleans(), _TEXT),
                                                      min_size=1, max_size=5)),
                max_size=6, unique_by=lambda block: block[0]),
       st.sampled_from(["", "src/"]))
def test_block_parsing_round_trips(blocks: list[tuple[str, list[tuple[int, bool, str]]]], prefix: str) -> None:
    out = b"\n".join(
        b"./" + path.encode() + b"\0"
        + b"".join(f"{n}{':' if is_match else '-'}{text}\n".encode() for n, is_match, text in lines)
        for path, lines in blocks)
    parsed = split_blocks(out, prefix)
    assert [path for path, _, _ in parsed] == [prefix + path for path, _ in blocks]
    for (_, start, end), (_, lines) in zip(parsed, blocks, strict=True):
        assert parse_block(out, start, end) == lines
        assert count_block_matches(out, start, end, context=1) == sum(m for _, m, _ in lines)
