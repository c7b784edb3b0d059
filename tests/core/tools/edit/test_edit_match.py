"""The matching chain as pure functions (anvil.core.tools.edit.match): each step, ambiguity, failures."""

from __future__ import annotations

import random

import pytest

from anvil.core.tools.edit.match import (
    Edit,
    EditApplied,
    EditFailed,
    LineRange,
    MultiEditApplied,
    MultiEditFailed,
    apply_edit,
    apply_edits,
)


def applied(text: str, old: str, new: str, replace_all: bool = False) -> EditApplied:
    outcome = apply_edit(text, old, new, replace_all)
    assert isinstance(outcome, EditApplied), outcome
    return outcome


def failed(text: str, old: str, new: str, replace_all: bool = False) -> EditFailed:
    outcome = apply_edit(text, old, new, replace_all)
    assert isinstance(outcome, EditFailed), outcome
    return outcome


PY = "def f():\n    x = 1\n    y = 2\n    return x + y\n"


# --- exact -------------------------------------------------------------------------------------------


def test_exact_unique_match_is_replaced_and_its_line_reported():
    result = applied(PY, "y = 2", "y = 3")
    assert result.text == PY.replace("y = 2", "y = 3")
    assert result.step == "exact" and result.ranges == (LineRange(3, 3),) and result.similarity == 1.0


def test_exact_match_spanning_lines_reports_first_and_last_line():
    result = applied(PY, "x = 1\n    y = 2\n", "z = 0\n")
    assert result.ranges == (LineRange(2, 3),)
    assert result.text == "def f():\n    z = 0\n    return x + y\n"


def test_several_exact_matches_are_refused_with_their_line_numbers():
    text = "a = 1\nb = 2\na = 1\nc = 3\na = 1\n"
    failure = failed(text, "a = 1", "a = 9")
    assert failure.kind == "ambiguous"
    assert failure.ranges == (LineRange(1, 1), LineRange(3, 3), LineRange(5, 5))
    assert "line(s) 1, 3, 5" in failure.message and "replace_all" in failure.message


def test_overlapping_occurrences_are_ambiguous_too():
    failure = failed("x = aaa\n", "aa", "b")
    assert failure.kind == "ambiguous" and len(failure.ranges) == 2
    assert "2 places, at line(s) 1." in failure.message
    assert applied("x = aaa\n", "aa", "b", replace_all=True).text == "x = ba\n"  # like str.replace


def test_replace_all_changes_every_occurrence():
    result = applied("a = 1\nb = 2\na = 1\n", "a = 1", "a = 9", replace_all=True)
    assert result.text == "a = 9\nb = 2\na = 9\n" and result.count == 2


def test_the_chain_stops_at_the_first_step_that_matches():
    # "x = 1" is present exactly; the indented variant must not be considered.
    assert applied("x = 1\n  x = 1  \n", "x = 1\n", "x = 2\n").ranges == (LineRange(1, 1),)


def test_empty_old_string_and_no_op_edits_are_refused():
    assert failed(PY, "", "x").kind == "empty_old_string"
    assert "write_file" in failed(PY, "", "x").message
    assert failed(PY, "x = 1", "x = 1").kind == "no_change"
    assert failed(PY, "x = 1\r\n", "x = 1\n").kind == "no_change"


# --- line endings and trailing whitespace ------------------------------------------------------------


def test_crlf_in_old_string_matches_the_normalised_text():
    result = applied(PY, "x = 1\r\n    y = 2", "x = 1\r\n    y = 20")
    assert result.step == "line_endings"
    assert result.text == PY.replace("y = 2", "y = 20")
    assert "\r" not in result.text


def test_trailing_whitespace_in_the_file_is_ignored_and_kept_on_unchanged_lines():
    text = "def f():   \n    x = 1  \n    y = 2\n"
    result = applied(text, "def f():\n    x = 1\n    y = 2", "def f():\n    x = 10\n    y = 2")
    assert result.step == "trailing_whitespace"
    # Unchanged lines keep the file's trailing blanks; the changed line is written as the model wrote it.
    assert result.text == "def f():   \n    x = 10\n    y = 2\n"


def test_trailing_whitespace_in_old_string_is_ignored():
    result = applied("alpha\nbeta\n", "alpha  \nbeta", "ALPHA\nbeta")
    assert result.step == "trailing_whitespace" and result.text == "ALPHA\nbeta\n"


def test_a_leading_blank_line_is_one_place_not_several():
    result = applied("a \nfoo\n", "  \nfoo  \n", "  \nbar\n")
    assert result.step == "trailing_whitespace" and result.text == "a \nbar\n"  # the file's own blank kept


# --- indentation -------------------------------------------------------------------------------------


def test_dedented_old_string_matches_and_new_string_is_reindented():
    text = "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n"
    result = applied(text, "if x:\n    return 1", "if x:\n    log(x)\n    return 1")
    assert result.step == "indentation"
    assert result.text == ("class A:\n    def f(self):\n        if x:\n            log(x)\n"
                           "            return 1\n        return 2\n")


def test_spaces_in_old_string_match_a_tab_indented_file_and_tabs_stay_tabs():
    text = "func main() {\n\tif ok {\n\t\treturn\n\t}\n}\n"
    old = "    if ok {\n        return\n    }"
    result = applied(text, old, "    if ok {\n        cleanup()\n        return\n    }")
    assert result.step == "indentation"
    assert result.text == "func main() {\n\tif ok {\n\t\tcleanup()\n\t\treturn\n\t}\n}\n"


def test_a_two_space_old_string_maps_onto_four_space_indentation():
    text = "def f():\n    if a:\n        b()\n"
    result = applied(text, "if a:\n  b()", "if a:\n  b()\n  c()")
    assert result.text == "def f():\n    if a:\n        b()\n        c()\n"


def test_non_uniform_indentation_difference_is_not_an_indentation_match():
    text = "if a:\n    b()\n        c()\n"
    # Same lines, but old_string's relative indentation is different (c is not nested deeper than b).
    outcome = apply_edit(text, "if a:\n  b()\n  c()", "if a:\n  b()\n  d()")
    assert not (isinstance(outcome, EditApplied) and outcome.step == "indentation")


def test_last_line_without_final_newline_stays_without_one():
    result = applied("top\n    last", "last", "LAST")
    assert result.text == "top\n    LAST"
    result = applied("class A:\n    def f():\n        a", "def f():\n    a", "def f():\n    b")
    assert result.step == "indentation" and result.text == "class A:\n    def f():\n        b"


# --- typography --------------------------------------------------------------------------------------


def test_straight_quotes_match_curly_ones_and_untouched_curly_quotes_stay():
    text = "title = “Hello” — it’s here…\nnext\n"
    result = applied(text, "title = \"Hello\" - it's here...", "title = \"Hello\" - it's there...")
    assert result.step == "typography"
    assert result.text == "title = “Hello” — it’s there…\nnext\n"


def test_curly_quotes_in_old_string_match_straight_ones_in_the_file():
    result = applied("say('hi')\n", "say(‘hi’)", "say('bye')")
    assert result.step == "typography" and result.text == "say('bye')\n"


def test_non_breaking_space_and_ellipsis_are_normalised():
    result = applied("price:\u00a05 …\n", "price: 5 ...", "price: 6 ...")
    assert result.step == "typography" and result.text == "price:\u00a06 …\n"


# --- fuzzy -------------------------------------------------------------------------------------------

BLOCK = "".join(f"def handler_{name}(request):\n    return render(request, '{name}.html')\n\n"
                for name in ("home", "about", "contact", "pricing", "careers"))


def test_a_block_with_a_typo_matches_fuzzily_with_its_similarity():
    old = ("def handler_contact(request):\n    return render(reqest, 'contact.html')\n\n"
           "def handler_pricing(request):\n")
    result = applied(BLOCK, old, "def handler_contact(request):\n    return redirect('/contact')\n\n"
                     "def handler_pricing(request):\n")
    assert result.step == "fuzzy" and 0.85 <= result.similarity < 1.0
    assert result.ranges == (LineRange(7, 10),)
    assert "    return redirect('/contact')\n" in result.text
    assert "render(request, 'contact.html')" not in result.text


def test_two_equally_similar_blocks_are_an_ambiguous_fuzzy_match():
    text = "x = 1\nfoo(a)\nbar(b)\nbaz(c)\ny = 2\nfoo(a)\nbar(b)\nbaz(c)\n"
    failure = failed(text, "foo(a)\nbar(bb)\nbaz(c)", "nope")
    assert failure.kind == "ambiguous_fuzzy"
    assert failure.ranges == (LineRange(2, 4), LineRange(6, 8))
    assert "lines 2-4" in failure.message and "lines 6-8" in failure.message


def test_fuzzy_needs_three_lines():
    text = "alpha = compute(1)\nbeta = compute(2)\n"
    failure = failed(text, "alpha = compute(1)\nbeta = compute(3)", "x")
    assert failure.kind == "not_found"
    assert "at least 3 lines" in failure.message


def test_fuzzy_reindents_new_string_to_the_block():
    text = "class A:\n\tdef run(self):\n\t\tstart()\n\t\twork()\n\t\tstop()\n"
    result = applied(text, "def run(self):\n    start()\n    wrk()\n    stop()",
                     "def run(self):\n    start()\n    work(fast=True)\n    stop()")
    assert result.step == "fuzzy"
    assert result.text == "class A:\n\tdef run(self):\n\t\tstart()\n\t\twork(fast=True)\n\t\tstop()\n"


def test_fuzzy_finds_a_block_deep_in_a_large_file():
    generator = random.Random(7)
    lines = [f"    {generator.randbytes(6).hex()} = compute({generator.randbytes(4).hex()})"
             for _ in range(100_000)]
    text = "\n".join(lines) + "\n"
    old = "\n".join(lines[77_000:77_004]).replace("compute(", "compte(", 1)
    result = applied(text, old, "    replaced = True")
    assert result.step == "fuzzy" and result.ranges == (LineRange(77_001, 77_004),)


# --- failures ----------------------------------------------------------------------------------------


def test_a_miss_reports_the_closest_region_with_line_numbers_and_similarity():
    failure = failed(BLOCK, "def handler_pricing(req):\n    return render(req, 'prices.htm')", "x")
    assert failure.kind == "not_found" and failure.closest is not None
    assert failure.closest.lines == LineRange(10, 11)
    assert failure.closest.text.startswith("def handler_pricing(request):")
    assert 0.5 < failure.closest.similarity < 1.0
    assert "lines 10-11" in failure.message


def test_a_one_line_fragment_miss_points_at_the_line_holding_something_like_it():
    failure = failed(BLOCK, "render(request, 'carers.html')", "x")
    assert failure.closest is not None and failure.closest.lines == LineRange(14, 14)


def test_a_miss_with_nothing_similar_has_no_closest_region():
    failure = failed(BLOCK, "zzzz qqqq wwww", "x")
    assert failure.closest is None and "Nothing in the file resembles it" in failure.message


def test_a_miss_with_read_file_line_numbers_says_to_drop_them():
    failure = failed(PY, "     2\tx = 1\n     3\ty = 3", "x")
    assert "line-number prefixes" in failure.message


def test_a_miss_whose_new_string_is_already_there_says_the_edit_may_be_done():
    failure = failed("value = compute(42)\n", "value = compute(41)", "value = compute(42)")
    assert "already in the file at line 1" in failure.message


def test_whitespace_only_old_string_only_matches_exactly():
    assert failed("a\tb\n", "  ", "x").kind == "not_found"


# --- several edits -----------------------------------------------------------------------------------


def test_edits_apply_in_order_each_seeing_the_previous_result():
    outcome = apply_edits("a\nb\nc\n", [Edit("a", "x"), Edit("x\nb", "y"), Edit("c", "z")])
    assert isinstance(outcome, MultiEditApplied)
    assert outcome.text == "y\nz\n" and [r.step for r in outcome.results] == ["exact"] * 3


@pytest.mark.parametrize("bad", [Edit("missing", "x"), Edit("dup", "x"), Edit("same", "same")])
def test_a_failing_edit_is_reported_by_index(bad):
    outcome = apply_edits("first\ndup\ndup\nsame\n", [Edit("first", "1st"), bad])
    assert isinstance(outcome, MultiEditFailed) and outcome.index == 1
