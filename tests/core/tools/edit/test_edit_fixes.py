"""What real models send that the chain used to get wrong: trailing whitespace around an edit, indentation that
is not one uniform shift, blank lines around old_string, placeholders for omitted code, over-escaped strings, and
replace_all with a fuzzy match."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from anvil.core.tools.base import ToolContext
from anvil.core.tools.edit.edit_tools import EditFileArgs, EditFileTool
from anvil.core.tools.edit.match import EditApplied, EditFailed, LineRange, apply_edit
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import ReadFileArgs, ReadFileTool


def applied(text: str, old: str, new: str, replace_all: bool = False) -> EditApplied:
    outcome = apply_edit(text, old, new, replace_all)
    assert isinstance(outcome, EditApplied), outcome
    return outcome


def failed(text: str, old: str, new: str, replace_all: bool = False) -> EditFailed:
    outcome = apply_edit(text, old, new, replace_all)
    assert isinstance(outcome, EditFailed), outcome
    return outcome


# --- 1. trailing whitespace on the lines around an edit ---------------------------------------------


def test_a_changed_line_is_written_as_the_model_wrote_it_not_with_the_old_trailing_blanks():
    result = applied("a = 1  \nb = 2\n", "a = 1\nb = 2", "a = 10\nb = 2")
    assert result.step == "trailing_whitespace"
    assert result.text == "a = 10\nb = 2\n"


def test_an_unchanged_whitespace_only_line_keeps_its_indentation():
    text = "def f():\n    x = 1\n    \n    y = 2  \n"
    result = applied(text, "def f():\n    x = 1\n\n    y = 2", "def g():\n    x = 1\n\n    y = 3")
    assert result.text == "def g():\n    x = 1\n    \n    y = 3\n"


def test_the_last_line_of_the_block_loses_the_old_trailing_blanks_when_changed():
    result = applied("a  \nb  \nc\n", "a\nb", "a\nB")
    assert result.text == "a  \nB\nc\n"


def test_an_unchanged_line_keeps_the_file_bytes_even_when_the_model_added_trailing_blanks():
    result = applied("a\t\nb\n", "a  \nb", "a  \nbee")
    assert result.text == "a\t\nbee\n"


WORDS = st.text(alphabet="abcxyz=()", min_size=1, max_size=8)
BLANKS = st.text(alphabet=" \t", max_size=3)


@st.composite
def trailing_whitespace_edits(draw: st.DrawFn) -> tuple[str, str, str, str]:
    """A file whose block differs from old_string only in trailing blanks, an edit of that block, and the
    text the rule says must result. Lines are unique so that which line pairs with which is unambiguous."""
    count = draw(st.integers(1, 6))
    contents = [f"{draw(WORDS)}{i}" for i in range(count)]
    if count > 1 and draw(st.booleans()):
        # One whitespace-only line, not the last: an empty last line would read as a final line break.
        contents[draw(st.integers(0, count - 2))] = ""
    indents = [draw(st.sampled_from(["", "  ", "\t"])) for _ in contents]
    file_lines = [indent + body + draw(BLANKS) for indent, body in zip(indents, contents, strict=True)]
    old_lines = [indent + body + draw(BLANKS) for indent, body in zip(indents, contents, strict=True)]
    new_lines: list[str] = []
    expected: list[str] = []
    for index, (old_line, file_line) in enumerate(zip(old_lines, file_lines, strict=True)):
        action = draw(st.sampled_from(["keep", "keep", "change", "delete", "insert"]))
        if action == "insert":
            added = f"added{index}" + draw(BLANKS)
            new_lines.append(added)
            expected.append(added)
            action = "keep"
        if action == "keep":
            new_lines.append(old_line.rstrip(" \t") + draw(BLANKS))
            expected.append(file_line)
        elif action == "change":
            changed = f"{indents[index]}changed{index}" + draw(BLANKS)
            new_lines.append(changed)
            expected.append(changed)
    assume(new_lines != [""])  # one kept blank line would read as an empty new_string, which deletes the block
    old = "\n".join(old_lines)
    new = "\n".join(new_lines)
    before = "top\n" + "\n".join(file_lines) + "\nbottom\n"
    after = "top\n" + "\n".join(expected) + "\nbottom\n"
    return before, old, new, after


@settings(max_examples=300, deadline=None)
@given(trailing_whitespace_edits())
def test_unchanged_lines_keep_the_files_bytes_and_changed_lines_are_the_models(case):
    before, old, new, after = case
    assume(old not in before and old != new and old.strip())
    outcome = apply_edit(before, old, new)
    assume(not (isinstance(outcome, EditFailed) and outcome.kind == "no_change"))
    assert isinstance(outcome, EditApplied), outcome
    assert outcome.step == "trailing_whitespace"
    assert outcome.text == after


# --- 2. indentation beyond a uniform shift ----------------------------------------------------------

NESTED = "class A:\n    def f(self):\n        return 1\n"


@pytest.mark.parametrize("old", [
    "    def f(self):\n    return 1",              # two lines: the file nests the second, old_string does not
    "class A:\n    def f(self):\n    return 1",   # the same at three lines
])
def test_indentation_that_flattens_the_files_nesting_is_refused_at_any_length(old):
    failure = failed(NESTED, old, old.replace("return 1", "return 2"))
    assert failure.kind == "indentation"
    assert "1.00" not in failure.message
    assert "indentation" in failure.message and "lines" in failure.message
    assert failure.closest is not None and failure.closest.text.endswith("        return 1")


def test_indentation_that_differs_per_line_but_keeps_every_level_is_applied_level_for_level():
    text = "def f():\n    if a:\n            b()\n"  # an odd file: 4 then 12 spaces
    result = applied(text, "def f():\n  if a:\n    b()", "def f():\n  if a:\n    b()\n    c()\n  d()")
    assert result.step == "indentation"
    assert result.text == "def f():\n    if a:\n            b()\n            c()\n    d()\n"


def test_a_new_line_between_two_levels_of_a_non_uniform_mapping_is_refused():
    text = "def f():\n    if a:\n            b()\n"
    failure = failed(text, "def f():\n  if a:\n    b()", "def f():\n  if a:\n   c()\n    b()")
    assert failure.kind == "indentation" and "new_string line 3" in failure.message
    assert "1.00" not in failure.message


async def test_the_tool_never_shows_similarity_1_00_for_a_refused_block(tmp_path: Path):
    (tmp_path / "a.py").write_text(NESTED)
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / ".data")
    await ReadFileTool().run(ReadFileArgs(path="a.py"), ctx)
    with pytest.raises(ToolError) as caught:
        await EditFileTool().run(EditFileArgs(path="a.py", old_string="    def f(self):\n    return 1",
                                              new_string="    def f(self):\n    return 2"), ctx)
    assert "1.00" not in str(caught.value) and "lines 2-3" in str(caught.value)


# --- 3. blank lines around old_string that the file does not have there ------------------------------

TWO_FUNCTIONS = "def a():\n    return 1\ndef b():\n    return 2\n"


def test_leading_blank_lines_the_file_does_not_have_are_dropped():
    result = applied(TWO_FUNCTIONS, "\n\ndef b():\n    return 2\n", "\n\ndef b():\n    return 3\n")
    assert result.text == "def a():\n    return 1\ndef b():\n    return 3\n"
    assert result.ranges == (LineRange(3, 4),)


def test_trailing_blank_lines_the_file_does_not_have_are_dropped():
    result = applied(TWO_FUNCTIONS, "def a():\n    return 1\n\n\n", "def a():\n    return 5\n\n\n")
    assert result.text == "def a():\n    return 5\ndef b():\n    return 2\n"


def test_extra_blank_lines_in_new_string_beyond_old_strings_are_kept():
    result = applied(TWO_FUNCTIONS, "\n\ndef b():", "\n\n\ndef b():")
    assert result.text == "def a():\n    return 1\n\ndef b():\n    return 2\n"


def test_dropped_blank_lines_also_reach_the_indentation_step():
    text = "class A:\n    def b(self):\n        return 2\n"
    result = applied(text, "\ndef b(self):\n    return 2\n\n", "\ndef b(self):\n    return 3\n\n")
    assert result.step == "indentation"
    assert result.text == "class A:\n    def b(self):\n        return 3\n"


# --- 4. placeholders for omitted code ----------------------------------------------------------------

CLASS = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
CLASS_OLD = "    def f(self):\n        return 1\n\n    def g(self):\n        return 2"


@pytest.mark.parametrize("placeholder", [
    "    # ... existing code ...", "    // ... existing code ...", "    # rest of the method unchanged",
    "    (rest of methods ...)", "    /* ... */", "    # ...", "    # Existing code here", "    <!-- ... -->",
    "    # … rest of the class unchanged …",
])
def test_a_placeholder_for_omitted_code_is_refused_and_named(placeholder):
    new = f"    def f(self):\n        return 10\n\n{placeholder}"
    failure = failed(CLASS, CLASS_OLD, new)
    assert failure.kind == "placeholder"
    assert "new_string line 4" in failure.message and placeholder.strip() in failure.message
    assert "full" in failure.message


@pytest.mark.parametrize("line", [
    "        ...", "        return [...args]", "        # TODO: handle the rest of the file later",
    "        # the result is unchanged when x is None", "        x = '...'",
])
def test_code_that_only_looks_a_little_like_a_placeholder_is_applied(line):
    result = applied(CLASS, "        return 1\n", f"{line}\n")
    assert line in result.text


def test_a_placeholder_that_old_string_already_has_is_not_an_omission():
    text = "def f():\n    # ... existing code ...\n    return 1\n"
    result = applied(text, "    # ... existing code ...\n    return 1", "    # ... existing code ...\n    return 2")
    assert result.text == "def f():\n    # ... existing code ...\n    return 2\n"


# --- 5. over-escaped strings -------------------------------------------------------------------------


def test_an_over_escaped_old_string_matches_and_new_string_is_unescaped_the_same_way():
    text = 'msg = "hi"\nprint(msg)\n'
    result = applied(text, 'msg = \\"hi\\"\\nprint(msg)', 'msg = \\"bye\\"\\nprint(msg)')
    assert result.step == "unescaped"
    assert result.text == 'msg = "bye"\nprint(msg)\n'


def test_unescaping_handles_tabs_and_escaped_backslashes_in_one_pass():
    text = 'sep = "\\t"\nrow = a\tb\n'  # the file holds a backslash-t in the string, and a real tab in row
    result = applied(text, 'sep = \\"\\\\t\\"\\nrow = a\\tb', 'sep = \\"\\\\n\\"\\nrow = a\\tc')
    assert result.text == 'sep = "\\n"\nrow = a\tc\n'


def test_a_file_that_really_has_escapes_is_matched_exactly_and_left_escaped():
    text = 'data = "{\\"a\\": 1}"\n'
    result = applied(text, '{\\"a\\": 1}', '{\\"a\\": 2}')
    assert result.step == "exact" and result.text == 'data = "{\\"a\\": 2}"\n'


async def test_the_result_says_that_old_and_new_string_were_unescaped(tmp_path: Path):
    (tmp_path / "a.py").write_text('msg = "hi"\n')
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / ".data")
    await ReadFileTool().run(ReadFileArgs(path="a.py"), ctx)
    result = await EditFileTool().run(EditFileArgs(path="a.py", old_string='msg = \\"hi\\"',
                                                   new_string='msg = \\"bye\\"'), ctx)
    assert (tmp_path / "a.py").read_text() == 'msg = "bye"\n'
    assert "unescap" in result.output


# --- 6. replace_all with a fuzzy match, and the line list of the result -----------------------------

TWICE = ("def one():\n    start()\n    work(1)\n    stop()\n\n"
         "def two():\n    start()\n    work(1)\n    stop()\n")


def test_replace_all_with_a_fuzzy_match_replaces_every_equally_similar_block():
    result = applied(TWICE, "    start()\n    wrk(1)\n    stop()", "    start()\n    work(2)\n    stop()",
                     replace_all=True)
    assert result.step == "fuzzy" and result.count == 2
    assert result.text == TWICE.replace("work(1)", "work(2)")
    assert result.ranges == (LineRange(2, 4), LineRange(7, 9))


def test_without_replace_all_the_same_fuzzy_match_stays_ambiguous():
    assert failed(TWICE, "    start()\n    wrk(1)\n    stop()", "x").kind == "ambiguous_fuzzy"


async def test_several_replacements_on_one_line_name_the_line_once(tmp_path: Path):
    (tmp_path / "a.txt").write_text("a a a\nb\n")
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / ".data")
    await ReadFileTool().run(ReadFileArgs(path="a.txt"), ctx)
    result = await EditFileTool().run(EditFileArgs(path="a.txt", old_string="a", new_string="c",
                                                   replace_all=True), ctx)
    assert "3 replacements at line 1," in result.output
    assert "1, 1" not in result.output
