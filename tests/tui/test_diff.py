"""Diff parsing as pure functions, the rendering function, and the DiffView widget's unified/split choice."""

from __future__ import annotations

import difflib
import random

from rich.console import Console, Group
from textual.app import App, ComposeResult

from anvil.tui.diff_model import DiffLine, header_path, parse_unified_diff, side_by_side_rows
from anvil.tui.diff_view import (
    DiffView,
    highlight_code,
    highlight_files,
    layout_diff,
    lexer_for_path,
    render_diff,
)

# The blank context line has lost its leading space, as editors that strip trailing whitespace leave it.
MULTI_HUNK = """\
diff --git a/src/app.py b/src/app.py
index 83db48f..bf269f4 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,4 +1,4 @@
 import os
-import sys
+import json

 def main():
@@ -20,3 +20,5 @@ def main():
     run()
+    log()
+    exit()
 # end
"""

NEW_FILE = """\
--- /dev/null
+++ b/notes/todo.md
@@ -0,0 +1,2 @@
+# Todo
+- ship it
"""

DELETED_FILE = """\
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-first
-second
"""

NO_NEWLINE = """\
--- a/x.txt
+++ b/x.txt
@@ -1,2 +1,2 @@
 keep
-old last
\\ No newline at end of file
+new last
\\ No newline at end of file
"""


def console_text(lines: list, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, legacy_windows=False)
    console.print(Group(*lines))
    return console.export_text()


# -- parsing -------------------------------------------------------------------------------------------


def test_multi_hunk_numbers_every_line_in_old_and_new_file() -> None:
    [file] = parse_unified_diff(MULTI_HUNK)
    assert (file.old_path, file.new_path) == ("src/app.py", "src/app.py")
    first, second = file.hunks
    assert [(ln.kind, ln.old_no, ln.new_no, ln.text) for ln in first.lines] == [
        ("context", 1, 1, "import os"),
        ("remove", 2, None, "import sys"),
        ("add", None, 2, "import json"),
        ("context", 3, 3, ""),
        ("context", 4, 4, "def main():"),
    ]
    assert second.section == "def main():"
    assert [(ln.kind, ln.old_no, ln.new_no) for ln in second.lines] == [
        ("context", 20, 20), ("add", None, 21), ("add", None, 22), ("context", 21, 23),
    ]
    assert (file.additions, file.deletions) == (3, 1)
    assert second.header == "@@ -20,3 +20,5 @@ def main():"


def test_new_file_from_dev_null() -> None:
    [file] = parse_unified_diff(NEW_FILE)
    assert file.is_new and not file.is_deleted
    assert (file.old_path, file.path) == (None, "notes/todo.md")
    lines = file.hunks[0].lines
    assert [(ln.old_no, ln.new_no, ln.text) for ln in lines] == [(None, 1, "# Todo"), (None, 2, "- ship it")]


def test_deleted_file_and_deleted_lines() -> None:
    [file] = parse_unified_diff(DELETED_FILE)
    assert file.is_deleted and file.path == "old.txt"
    assert [(ln.kind, ln.old_no, ln.new_no) for ln in file.hunks[0].lines] == [("remove", 1, None), ("remove", 2, None)]
    assert (file.additions, file.deletions) == (0, 2)


def test_no_newline_markers_attach_to_the_line_before_them() -> None:
    [file] = parse_unified_diff(NO_NEWLINE)
    lines = file.hunks[0].lines
    assert [(ln.kind, ln.text, ln.no_newline) for ln in lines] == [
        ("context", "keep", False), ("remove", "old last", True), ("add", "new last", True),
    ]
    assert file.notes == ()  # the markers are not mistaken for stray text


def test_removed_line_that_looks_like_a_file_header_stays_in_the_hunk() -> None:
    diff = "--- a/m.md\n+++ b/m.md\n@@ -1,2 +1,1 @@\n--- rule\n+++ title\n-x\n"
    # Counts say 2 old / 1 new: "--- rule" is a removal of "-- rule", "+++ title" an addition of "++ title".
    [file] = parse_unified_diff(diff)
    kinds = [(ln.kind, ln.text) for ln in file.hunks[0].lines]
    assert kinds == [("remove", "-- rule"), ("add", "++ title"), ("remove", "x")]


def test_several_files_bare_hunks_and_trailing_notes() -> None:
    two = parse_unified_diff(NEW_FILE + DELETED_FILE)
    assert [f.path for f in two] == ["notes/todo.md", "old.txt"]
    [bare] = parse_unified_diff("@@ -3 +3 @@\n-a\n+b\n… diff cut here: 40 more lines\n")
    assert bare.path is None and [ln.old_no for ln in bare.hunks[0].lines] == [3, None]
    assert bare.notes == ("… diff cut here: 40 more lines",)
    assert parse_unified_diff("") == []


def test_header_paths() -> None:
    assert header_path("a/src/x.py\t2024-01-01 10:00:00") == "src/x.py"
    assert header_path('"b/with space.py"') == "with space.py"
    assert header_path("/dev/null") is None


def test_difflib_output_round_trips_to_both_texts() -> None:
    rng = random.Random(7)
    for _ in range(30):
        before = [f"line {rng.randint(0, 9)}" for _ in range(rng.randint(0, 25))]
        after = list(before)
        for _ in range(rng.randint(1, 5)):
            if after and rng.random() < 0.5:
                del after[rng.randrange(len(after))]
            else:
                after.insert(rng.randint(0, len(after)), f"new {rng.randint(0, 99)}")
        text = "".join(difflib.unified_diff([f"{x}\n" for x in before], [f"{x}\n" for x in after], "a/f", "b/f", n=1))
        for file in parse_unified_diff(text):
            for hunk in file.hunks:
                olds = [ln for ln in hunk.lines if ln.kind != "add"]
                news = [ln for ln in hunk.lines if ln.kind != "remove"]
                assert [before[ln.old_no - 1] for ln in olds if ln.old_no] == [ln.text for ln in olds]
                assert [after[ln.new_no - 1] for ln in news if ln.new_no] == [ln.text for ln in news]


def test_side_by_side_pairs_removals_with_following_additions() -> None:
    [file] = parse_unified_diff("@@ -1,4 +1,3 @@\n ctx\n-a\n-b\n+A\n tail\n")
    rows = side_by_side_rows(file.hunks[0])

    def texts(row: tuple[DiffLine | None, DiffLine | None]) -> tuple[str | None, str | None]:
        return (row[0].text if row[0] else None, row[1].text if row[1] else None)

    assert [texts(r) for r in rows] == [("ctx", "ctx"), ("a", "A"), ("b", None), ("tail", "tail")]


# -- rendering -----------------------------------------------------------------------------------------


def test_unified_render_shows_numbers_signs_and_hunk_headers() -> None:
    lines = render_diff(MULTI_HUNK, width=80, pygments_style="monokai")
    assert {line.cell_len for line in lines} == {80}  # every line fills the width, so the tints do too
    text = console_text(lines, 80)
    assert "src/app.py  +3 -1" in text
    assert "@@ -20,3 +20,5 @@ def main():" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["2", "-", "import", "sys"] in rows
    assert ["2", "+", "import", "json"] in rows
    assert ["1", "1", "import", "os"] in rows


def test_split_render_puts_old_and_new_on_one_row() -> None:
    text = console_text(render_diff(MULTI_HUNK, width=160, split=True, pygments_style="monokai"), 160)
    row = next(line for line in text.splitlines() if "import sys" in line)
    assert "import json" in row and row.index("import sys") < row.index("import json")


def test_large_diffs_are_capped_with_a_count_of_the_rest() -> None:
    body = "".join(f"+line {n}\n" for n in range(1, 1001))
    diff = f"--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,1000 @@\n{body}"
    text = console_text(render_diff(diff, width=80, pygments_style="monokai", max_lines=50), 80)
    assert "line 50" in text and "line 51" not in text
    assert "… 950 more lines not shown" in text


def test_no_newline_and_empty_diff_render_as_notes() -> None:
    text = console_text(render_diff(NO_NEWLINE, width=80, pygments_style="default"), 80)
    assert text.count("no newline at end of file") == 2
    assert "(no changes)" in console_text(render_diff("", width=40), 40)


def test_long_lines_wrap_under_their_gutter() -> None:
    diff = "--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-short\n+" + "x" * 100 + "\n"
    lines = [line.plain for line in render_diff(diff, width=60)]
    added = [line for line in lines if "xxx" in line]
    assert len(added) == 2 and added[0].startswith("  1 + ") and added[1].startswith("      x")
    assert sum(line.count("x") for line in added) == 100


def test_highlighting_is_separate_from_layout_and_keeps_the_text() -> None:
    files = parse_unified_diff(MULTI_HUNK)
    highlights = highlight_files(files, "monokai")
    assert highlights[0][0][1].plain == "import sys"
    assert any(span.style.color for span in highlights[0][0][0].spans)  # "import" is a keyword: coloured
    plain = layout_diff(files, None, width=80, split=False)
    coloured = layout_diff(files, highlights, width=80, split=False)
    assert [line.plain for line in plain] == [line.plain for line in coloured]


def test_lexer_from_file_name_and_highlighting_without_background() -> None:
    assert lexer_for_path("src/app.py") == "python"
    assert lexer_for_path("Makefile") == "make"
    assert lexer_for_path("notes.unknownext") is None
    code = highlight_code("def f():\n    return 1", "python", "monokai")
    assert code.plain == "def f():\n    return 1"
    styles = [span.style for span in code.spans]
    assert any(getattr(s, "color", None) is not None for s in styles)  # keywords got a colour...
    assert all(getattr(s, "bgcolor", None) is None for s in styles)  # ...but not the style's background


# -- the widget ----------------------------------------------------------------------------------------


class DiffHost(App[None]):
    def __init__(self, view: DiffView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.view


async def test_widget_is_unified_when_narrow_and_split_when_wide() -> None:
    app = DiffHost(DiffView(MULTI_HUNK))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not app.view.split
        assert app.view.size.height >= 12  # title, 2 hunk headers, 9 lines: height follows the content
    app = DiffHost(DiffView(MULTI_HUNK))
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause()
        assert app.view.split
    app = DiffHost(DiffView(MULTI_HUNK, side_by_side=False))
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause()
        assert not app.view.split
        assert (app.view.additions, app.view.deletions) == (3, 1)


async def test_widget_tints_follow_the_theme() -> None:
    app = DiffHost(DiffView(MULTI_HUNK, path="src/app.py"))
    async with app.run_test(size=(100, 30)) as pilot:
        app.theme = "textual-dark"
        await pilot.pause()
        dark = app.view._palette().added.bgcolor
        app.theme = "textual-light"
        await pilot.pause()
        light = app.view._palette().added.bgcolor
        assert dark is not None and light is not None and dark != light


async def test_big_diffs_are_highlighted_in_a_thread_and_drawn_with_tints() -> None:
    body = "".join(f"-old_{n} = {n}\n+new_{n} = {n} + 1\n" for n in range(200))
    app = DiffHost(DiffView(f"--- a/big.py\n+++ b/big.py\n@@ -1,200 +1,200 @@\n{body}", max_lines=300))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.view
        assert view._highlights is not None  # the worker delivered the colours
        assert view.size.height == 1 + 1 + 300 + 1  # title, hunk header, capped body, "… more lines" note
        added_tint = view._palette().added.bgcolor
        first_added = view.render_line(3)  # title, hunk header, "-old_0", then "+new_0"
        assert "new_0" in first_added.text
        assert any(seg.style is not None and seg.style.bgcolor == added_tint for seg in first_added)


async def test_a_very_narrow_widget_still_draws_every_line() -> None:
    app = DiffHost(DiffView(MULTI_HUNK))
    async with app.run_test(size=(14, 30)) as pilot:
        await pilot.pause()
        lines = [app.view.render_line(y) for y in range(app.view.size.height)]
        assert lines and {line.cell_length for line in lines} == {app.view.content_size.width}
