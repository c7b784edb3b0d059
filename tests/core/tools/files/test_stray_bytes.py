"""UTF-8 files with a few bytes that are not UTF-8: read without mojibake, edited with every untouched byte kept,
new text written as UTF-8; real latin-1 files stay latin-1."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anvil.core.tools.base import ToolContext
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool, MultiEditArgs, MultiEditTool
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool, WriteFileArgs, WriteFileTool
from anvil.core.tools.files.textfile import decode_text

# "café" in UTF-8 on line 1, one stray latin-1 "é" (0xE9) on line 2, and a cut multi-byte character on line 4.
MIXED = b"# caf\xc3\xa9 menu\nname = 'Jos\xe9'\nvalue = 1\ntail = '\xe2\x82'\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def read(ctx: ToolContext, path: str) -> str:
    return (await ReadFileTool().run(ReadFileArgs(path=path), ctx)).output


async def edit(ctx: ToolContext, path: str, old: str, new: str) -> str:
    return (await EditFileTool().run(EditFileArgs(path=path, old_string=old, new_string=new), ctx)).output


def test_utf8_with_stray_bytes_decodes_as_utf8_and_round_trips() -> None:
    document = decode_text(MIXED)
    assert document.format.encoding == "utf-8" and document.format.stray_bytes
    assert document.text == "# caf\u00e9 menu\nname = 'Jos\ufffd'\nvalue = 1\ntail = '\ufffd\ufffd'\n"
    assert document.stray_bytes() == (3, [2, 4])
    assert document.encode(document.text) == MIXED


def test_a_real_latin1_file_stays_latin1() -> None:
    document = decode_text(b"caf\xe9 cr\xe8me\n")  # no valid multi-byte UTF-8 anywhere: a legacy 8-bit file
    assert document.format.encoding == "latin-1" and not document.format.stray_bytes
    assert document.text == "caf\u00e9 cr\u00e8me\n"
    assert document.encode(document.text + "\u00e0 la carte\n") == b"caf\xe9 cr\xe8me\n\xe0 la carte\n"


async def test_read_shows_the_text_and_says_where_the_invalid_bytes_are(ctx, project) -> None:
    (project / "menu.py").write_bytes(MIXED)
    output = await read(ctx, "menu.py")
    assert "     1\t# caf\u00e9 menu" in output and "caf\u00c3\u00a9" not in output  # no mojibake
    assert "     2\tname = 'Jos\ufffd'" in output
    assert ("(Note: menu.py is UTF-8 except for 3 bytes that are not valid UTF-8, on lines 2, 4, shown as \ufffd. "
            "Edits keep them as they are; text you write is stored as UTF-8.)") in output


async def test_an_edit_keeps_untouched_bytes_and_writes_new_text_as_utf8(ctx, project) -> None:
    path = project / "menu.py"
    path.write_bytes(MIXED)
    await read(ctx, "menu.py")
    await edit(ctx, "menu.py", "value = 1", "value = '\u00e9t\u00e9'")
    assert path.read_bytes() == MIXED.replace(b"value = 1", b"value = '\xc3\xa9t\xc3\xa9'")


async def test_an_edit_on_the_line_of_a_stray_byte_keeps_that_byte(ctx, project) -> None:
    path = project / "menu.py"
    path.write_bytes(MIXED)
    await read(ctx, "menu.py")
    await edit(ctx, "menu.py", "name = 'Jos\ufffd'", "full_name = 'Jos\ufffd Garc\u00eda'")
    assert path.read_bytes() == MIXED.replace(b"name = 'Jos\xe9'", b"full_name = 'Jos\xe9 Garc\xc3\xada'")


async def test_edits_far_apart_keep_the_stray_bytes_between_them(ctx, project) -> None:
    path = project / "menu.py"
    path.write_bytes(MIXED)
    await read(ctx, "menu.py")
    await MultiEditTool().run(MultiEditArgs(path="menu.py", edits=[
        {"old_string": "# caf\u00e9 menu", "new_string": "# the menu"},
        {"old_string": "tail", "new_string": "end"}]), ctx)
    assert path.read_bytes() == b"# the menu\nname = 'Jos\xe9'\nvalue = 1\nend = '\xe2\x82'\n"


async def test_rewriting_the_whole_file_keeps_the_lines_copied_from_it(ctx, project) -> None:
    path = project / "menu.py"
    path.write_bytes(MIXED)
    await read(ctx, "menu.py")
    shown = decode_text(MIXED).text
    await WriteFileTool().run(WriteFileArgs(path="menu.py", content="import os\n" + shown), ctx)
    assert path.read_bytes() == b"import os\n" + MIXED


async def test_the_model_cannot_smuggle_raw_bytes_in_as_surrogates(ctx, project) -> None:
    path = project / "menu.py"
    path.write_bytes(MIXED)
    await read(ctx, "menu.py")
    with pytest.raises(ToolError, match=r"cannot hold '\\udcff'.*line 3"):
        await edit(ctx, "menu.py", "value = 1", "value = '\udcff'")
    assert path.read_bytes() == MIXED


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=40)


@settings(max_examples=150, deadline=None)
@example(pieces=[("", b"\xff\xfe"), ("", b"\x80")], marker_at=1)  # a UTF-16 byte-order mark that is not one
@example(pieces=[("", b"\xfe\xff"), ("", b"\x80")], marker_at=1)
@given(pieces=st.lists(st.tuples(_TEXT, st.binary(min_size=1, max_size=2).map(lambda b: bytes(x | 0x80 for x in b))),
                       min_size=1, max_size=6), marker_at=st.integers(min_value=0, max_value=5))
def test_untouched_bytes_always_round_trip(pieces: list[tuple[str, bytes]], marker_at: int) -> None:
    """Any UTF-8 text with invalid bytes mixed in: an edit elsewhere changes nothing but what it replaced."""
    chunks = [text.encode() + junk for text, junk in pieces]
    chunks.insert(min(marker_at, len(chunks)), b"\xc3\xa9 MARKER\n")
    data = b"".join(chunks)
    document = decode_text(data)
    assert document.encode(document.text) == data
    if document.format.encoding == "utf-8":
        assert document.encode(document.text.replace("MARKER", "CHANGED \u00e0", 1)) == data.replace(
            b"MARKER", "CHANGED \u00e0".encode(), 1)
