"""Parsing the *** Begin Patch format: every construct, and malformed patches refused with the line at fault."""

from __future__ import annotations

import pytest

from anvil.core.tools.edit.patch_parse import AddFile, DeleteFile, Hunk, PatchSyntaxError, UpdateFile, parse_patch


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


def test_every_construct_parses_into_its_operation():
    ops = parse_patch(patch(
        "*** Add File: docs/new.md",
        "+# Title",
        "+",
        "+text",
        "*** Delete File: old.txt",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ class Greeter:",
        "@@     def greet(self):",
        "         name = self.name",
        "-        print('Hi')",
        "+        print('Hello', name)",
        "@@",
        " ",
        "-last()",
        "+final()",
        "*** End of File",
    ))
    assert ops == [
        AddFile("docs/new.md", ("# Title", "", "text"), 2),
        DeleteFile("old.txt", 6),
        UpdateFile("src/app.py", "src/main.py", (
            Hunk(1, 9, ("class Greeter:", "def greet(self):"), ("        name = self.name", "        print('Hi')"),
                 ("        name = self.name", "        print('Hello', name)")),
            Hunk(2, 14, (), ("", "last()"), ("", "final()"), at_end=True),
        ), 7),
    ]
    assert ops[0].text == "# Title\n\ntext\n"


def test_crlf_patches_blank_lines_between_sections_and_a_first_hunk_without_at_at():
    ops = parse_patch("\r\n*** Begin Patch\r\n*** Update File: a.py\r\n import os\r\n+import re\r\n\r\n"
                      "*** Add File: b.txt\r\n+b\r\n\r\n*** End Patch\r\n\r\n")
    assert ops == [UpdateFile("a.py", None, (Hunk(1, 4, (), ("import os",), ("import os", "import re")),), 3),
                   AddFile("b.txt", ("b",), 7)]


def test_an_empty_line_in_a_hunk_is_empty_context_and_a_pure_rename_needs_no_hunk():
    ops = parse_patch(patch("*** Update File: a.py", "@@ def f():", "     x = 1", "", "-    y = 2",
                            "*** Update File: b.py", "*** Move to: c.py"))
    assert ops[0].hunks[0].old == ("    x = 1", "", "    y = 2") and ops[0].hunks[0].new == ("    x = 1", "")
    assert ops[1] == UpdateFile("b.py", "c.py", (), 7)


def test_a_hunk_label_names_its_number_line_and_anchors():
    hunk = parse_patch(patch("*** Update File: a.py", "@@ x", "-a", "@@ class A:", "@@ def f():", "-b"))[0].hunks[1]
    assert hunk.label() == "hunk 2 (patch line 5, @@ class A:, @@ def f():)"


@pytest.mark.parametrize(("text", "expected"), [
    ("", "The patch is empty"),
    ("*** Update File: a.py\n-x\n+y\n*** End Patch", "Line 1 is '*** Update File: a.py', but a patch must start"),
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF", "must start with"),
    ("*** Begin Patch\n*** Update File: a.py\n-x\n+y", "must end with '*** End Patch'"),
    (patch(), "no file operations"),
    (patch("*** Modify File: a.py"), "Patch line 2 ('*** Modify File: a.py'): expected a file operation"),
    (patch("*** Add File:a.py", "+x"), "needs one space after its colon"),
    (patch("*** Add File: ", "+x"), "the file path is missing"),
    (patch("*** Add File: a.py", "x"), "Patch line 3 ('x'): every line of an added file starts with '+'"),
    (patch("*** Delete File: a.py", "-x"), "nothing may follow '*** Delete File:'"),
    (patch("*** Update File: a.py"), "has no hunks"),
    (patch("*** Update File: a.py", "@@", "*x"), "Patch line 4 ('*x'): a hunk line starts with ' '"),
    (patch("*** Update File: a.py", "@@", " same", " lines"), "only has context lines"),
    (patch("*** Update File: a.py", "@@", "*** End of File"), "the hunk has no lines"),
    (patch("*** Update File: a.py", "@@", "-x", "*** Move to: b.py"), "must come right after"),
    (patch("*** Update File: a.py", "-x", "*** End of File", "*** End of File"), "must end a hunk"),
])
def test_malformed_patches_are_refused_naming_the_line(text, expected):
    with pytest.raises(PatchSyntaxError) as caught:
        parse_patch(text)
    assert expected in str(caught.value)
