"""Properties of editing real files, checked with hypothesis over many generated files and edits.

- A refused edit never changes the file (and never reaches the checkpoint store).
- An applied exact edit followed by its inverse restores the file byte for byte, whatever its encoding,
  byte-order mark, line-ending style and final newline.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from anvil.core.session.checkpoints import NullCheckpointStore
from anvil.core.tools.base import ToolContext
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool
from anvil.core.tools.edit.match import EditApplied, apply_edit
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool

# A small alphabet makes repeated substrings (ambiguity), near misses (fallback steps) and exact hits all
# likely; it includes tabs, trailing blanks, typographic characters and non-ASCII text.
ALPHABET = "ab \t'’“-é\n"
ENCODINGS = {"utf-8": ("utf-8", b""), "utf-8 BOM": ("utf-8", b"\xef\xbb\xbf"),
             "utf-16 LE": ("utf-16-le", b"\xff\xfe"), "utf-16 BE": ("utf-16-be", b"\xfe\xff")}

texts = st.text(alphabet=ALPHABET, max_size=60)
file_formats = st.tuples(st.sampled_from(sorted(ENCODINGS)), st.sampled_from(["\n", "\r\n", "\r"]))


class RecordingStore(NullCheckpointStore):
    def __init__(self) -> None:
        self.calls: list[tuple[Path, bytes | None]] = []

    def record(self, path: Path, original: bytes | None) -> None:
        self.calls.append((path, original))


def occurrences(text: str, old: str) -> int:
    """How many places ``old`` starts at, overlapping ones included ("aa" is twice in "aaa")."""
    return sum(1 for i in range(len(text)) if text.startswith(old, i))


def _file_bytes(text: str, fmt: tuple[str, str]) -> bytes:
    codec, bom = ENCODINGS[fmt[0]]
    return bom + text.replace("\n", fmt[1]).encode(codec)


def _run_edit(root: Path, store: RecordingStore, old: str, new: str, replace_all: bool) -> bool:
    """Read then edit ``f.txt``; True when the edit was applied, False when it was refused."""
    ctx = ToolContext(root=root, data_dir=root / ".data", checkpoints=store)

    async def go() -> bool:
        await ReadFileTool().run(ReadFileArgs(path="f.txt"), ctx)
        args = EditFileArgs(path="f.txt", old_string=old, new_string=new, replace_all=replace_all)
        try:
            await EditFileTool().run(args, ctx)
        except ToolError:
            return False
        return True

    return asyncio.run(go())


@settings(max_examples=200, deadline=None)
@given(text=texts, old=texts, new=texts, replace_all=st.booleans(), fmt=file_formats)
def test_a_refused_edit_never_changes_the_file(text, old, new, replace_all, fmt):
    data = _file_bytes(text, fmt)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "f.txt").write_bytes(data)
        store = RecordingStore()
        if _run_edit(root, store, old, new, replace_all):
            assert store.calls == [(root.resolve() / "f.txt", data)]
        else:
            assert (root / "f.txt").read_bytes() == data
            assert store.calls == []


@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=texts.filter(bool), new=texts.filter(bool), fmt=file_formats)
def test_an_exact_edit_then_its_inverse_restores_the_file_byte_for_byte(data, text, new, fmt):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    old = text[start:end]
    assume(occurrences(text, old) == 1 and old != new)
    edited = text.replace(old, new)
    assume(occurrences(edited, new) == 1)  # otherwise the inverse is (rightly) refused as ambiguous
    # A file left without any line break has no line-ending style to remember (new ones get LF).
    assume(fmt[1] == "\n" or "\n" in edited or "\n" not in text)
    original = _file_bytes(text, fmt)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        path = root / "f.txt"
        path.write_bytes(original)
        assert _run_edit(root, RecordingStore(), old, new, False)
        if "\n" in text:  # a file without line breaks has no line-ending style to keep
            assert path.read_bytes() == _file_bytes(edited, fmt)
        assert _run_edit(root, RecordingStore(), new, old, False)
        assert path.read_bytes() == original


@settings(max_examples=300, deadline=None)
@given(data=st.data(), text=texts.filter(bool), new=texts)
def test_an_exact_match_replaces_exactly_the_one_occurrence(data, text, new):
    start = data.draw(st.integers(0, len(text) - 1))
    old = text[start:data.draw(st.integers(start + 1, len(text)))]
    assume(occurrences(text, old) == 1 and old != new)
    outcome = apply_edit(text, old, new)
    assert isinstance(outcome, EditApplied) and outcome.step == "exact"
    assert outcome.text == text[:start] + new + text[start + len(old):]
    assert outcome.ranges[0].first == text.count("\n", 0, start) + 1


@settings(max_examples=300, deadline=None)
@given(old=texts.filter(bool), parts=st.lists(texts, min_size=3, max_size=5), new=texts)
def test_several_occurrences_without_replace_all_are_always_refused(old, parts, new):
    text = old.join(parts)
    assume(old != new)
    outcome = apply_edit(text, old, new)
    assert not isinstance(outcome, EditApplied)
    assert outcome.kind in ("ambiguous", "no_change")
    if outcome.kind == "ambiguous":
        assert len(outcome.ranges) == occurrences(text, old)


@settings(max_examples=300, deadline=None)
@given(text=texts, old=st.text(alphabet=ALPHABET + "\r….", max_size=20), new=texts, replace_all=st.booleans())
def test_the_matching_chain_always_answers_and_an_applied_edit_changes_the_text(text, old, new, replace_all):
    outcome = apply_edit(text, old, new, replace_all)
    if isinstance(outcome, EditApplied):
        assert outcome.text != text and outcome.ranges
    else:
        assert outcome.message and outcome.kind
