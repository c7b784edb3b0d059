"""Decoding, encoding and diffs of text files (anvil.core.tools.files.textfile and textdiff)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvil.core.tools.files.textdiff import diff_stats, lines_keepends, unified_diff
from anvil.core.tools.files.textfile import (
    BinaryFileError,
    TextFormat,
    UnencodableTextError,
    count_lines,
    decode_text,
    detect_newline,
    document_for_new_text,
    split_lines,
    stream_encoding,
)


@pytest.mark.parametrize(
    ("data", "encoding", "bom", "newline"),
    [
        (b"a\nb\n", "utf-8", b"", "\n"),
        (b"a\r\nb\r\n", "utf-8", b"", "\r\n"),
        (b"a\rb\r", "utf-8", b"", "\r"),
        (b"\xef\xbb\xbfa\r\nb", "utf-8", b"\xef\xbb\xbf", "\r\n"),
        ("\ufeffa\r\nb\r\n".encode("utf-16-le"), "utf-16-le", b"\xff\xfe", "\r\n"),
        ("\ufeffa\nb\n".encode("utf-16-be"), "utf-16-be", b"\xfe\xff", "\n"),
        ("\ufeffa\nb\n".encode("utf-32-le"), "utf-32-le", b"\xff\xfe\x00\x00", "\n"),
        (b"caf\xe9\n", "latin-1", b"", "\n"),
        ("h\u00e9llo \u2603 \U0001f600\n".encode(), "utf-8", b"", "\n"),
    ],
)
def test_decode_detects_the_format_and_round_trips_byte_for_byte(data, encoding, bom, newline):
    document = decode_text(data)
    assert document.format.encoding == encoding
    assert document.format.bom == bom
    assert document.format.newline == newline
    assert "\r" not in document.text and not document.text.startswith("\ufeff")
    assert document.encode(document.text) == data


def test_text_is_normalised_to_lf_and_the_final_newline_is_reported():
    with_final = decode_text(b"one\r\ntwo\r\n")
    without_final = decode_text(b"one\r\ntwo")
    assert with_final.text == "one\ntwo\n" and with_final.final_newline
    assert without_final.text == "one\ntwo" and not without_final.final_newline


def test_crlf_file_gets_crlf_on_lines_an_edit_adds():
    document = decode_text(b"a\r\nb\r\n")
    assert document.encode("a\nnew\nb\n") == b"a\r\nnew\r\nb\r\n"


def test_mixed_line_endings_keep_the_endings_of_untouched_lines():
    data = b"one\r\ntwo\nthree\r\nfour\r\nfive\n"
    document = decode_text(data)
    assert document.format.mixed_newlines and document.format.newline == "\r\n"
    edited = document.encode(document.text.replace("three", "THREE\ninserted"))
    assert edited == b"one\r\ntwo\nTHREE\r\ninserted\r\nfour\r\nfive\n"


def test_detect_newline_prefers_the_dominant_kind_and_lf_on_ties():
    assert detect_newline("a\r\nb\r\nc\n") == ("\r\n", True)
    assert detect_newline("a\nb\r\n") == ("\n", True)
    assert detect_newline("no newline") == ("\n", False)


def test_nul_bytes_near_the_start_mean_binary_but_utf16_with_bom_is_text():
    with pytest.raises(BinaryFileError):
        decode_text(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert decode_text("\ufeffhi\n".encode("utf-16-le")).text == "hi\n"


def test_invalid_utf8_falls_back_to_latin1_and_keeps_every_byte():
    data = bytes(range(1, 256))  # every byte but NUL, invalid as UTF-8
    document = decode_text(data)
    assert document.format.encoding == "latin-1"
    assert document.encode(document.text) == data


def test_encoding_a_character_latin1_cannot_hold_names_it_and_the_line():
    document = decode_text(b"caf\xe9\nline two\n")
    with pytest.raises(UnencodableTextError) as caught:
        document.encode("caf\u00e9\nprice: 5\u20ac\n")
    assert caught.value.char == "\u20ac" and caught.value.line == 2


def test_new_text_documents_are_utf8_and_take_the_contents_own_line_ending():
    assert document_for_new_text("a\r\nb\r\n").encode("a\nb\n") == b"a\r\nb\r\n"
    assert document_for_new_text("a\nb\n").format == TextFormat()


def test_line_helpers_do_not_count_a_final_newline_as_a_line():
    assert split_lines("a\nb\n") == ["a", "b"] and split_lines("a\nb") == ["a", "b"]
    assert split_lines("") == [] and count_lines("") == 0
    assert count_lines("a\n\nb") == 3 and count_lines("\n") == 1


def test_stream_encoding_reads_boms_and_sniffs_binary():
    assert stream_encoding(b"\xef\xbb\xbfabc") == "utf-8-sig"
    assert stream_encoding(b"\xff\xfea\x00") == "utf-16"
    assert stream_encoding(b"abc\x00def") is None
    assert stream_encoding(b"caf\xe9 and more text") == "latin-1"
    assert stream_encoding(("x" * 10 + "\u00e9").encode()[:11]) == "utf-8"  # a character cut by the head


def test_ten_megabyte_file_round_trips(tmp_path):
    data = ("x = 'caf\u00e9'  # a comment\r\n" * 420_000).encode()
    assert len(data) > 10_000_000
    document = decode_text(data)
    assert document.format.newline == "\r\n"
    assert document.encode(document.text) == data


# --- unified_diff ------------------------------------------------------------------------------------


def test_diff_of_one_changed_line_in_a_long_file_has_one_small_hunk():
    before = "".join(f"line {i}\n" for i in range(1, 10_001))
    after = before.replace("line 5000\n", "line five thousand\n")
    diff = unified_diff(before, after, "big.txt")
    assert diff.startswith("--- a/big.txt\n+++ b/big.txt\n@@ -4997,7 +4997,7 @@\n")
    assert "-line 5000\n+line five thousand\n" in diff
    assert diff_stats(diff) == (1, 1)


def test_diff_of_a_new_file_comes_from_dev_null():
    diff = unified_diff("", "a\nb\n", "new.py", new_file=True)
    assert diff == "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n"


def test_diff_marks_a_missing_final_newline():
    diff = unified_diff("a\nb\n", "a\nb", "x")
    assert "-b\n+b\n\\ No newline at end of file\n" in diff


def test_identical_texts_have_no_diff():
    assert unified_diff("same\n", "same\n", "x") == ""


_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _apply_patch(before: str, diff: str) -> str:
    """A minimal patch applier: enough to prove a diff turns ``before`` into the new text."""
    old_lines = lines_keepends(before)
    out: list[str] = []
    position = 0
    lines = diff.split("\n")[2:]
    i = 0
    while i < len(lines) and lines[i]:
        match = _HEADER.match(lines[i])
        assert match, lines[i]
        start, length = int(match[1]), int(match[2] if match[2] is not None else 1)
        first = start - 1 if length else start
        out.extend(old_lines[position:first])
        position = first
        i += 1
        while i < len(lines) and lines[i] and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:] + "\n"
            if i + 1 < len(lines) and lines[i + 1].startswith("\\"):
                body = body[:-1]
                i += 1
            if tag in " -":
                assert old_lines[position] == body
                position += 1
            if tag in " +":
                out.append(body)
            i += 1
    out.extend(old_lines[position:])
    return "".join(out)


_lines = st.lists(st.sampled_from(["a", "b", "c", "", "  x", "é"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(before=_lines, after=_lines, before_final=st.booleans(), after_final=st.booleans())
def test_diff_applied_to_the_old_text_gives_the_new_text(before, after, before_final, after_final):
    old = "\n".join(before) + ("\n" if before_final and before else "")
    new = "\n".join(after) + ("\n" if after_final and after else "")
    diff = unified_diff(old, new, "f")
    assert _apply_patch(old, diff) == new
