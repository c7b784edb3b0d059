"""Lines a model writes in place of code it left out: ``// ... existing code ...``, ``# rest of the method
unchanged``, ``(rest of methods ...)``, ``/* ... */``.

Written into new_string, such a line replaces real code with a comment. A line counts as a placeholder when it
is a comment (or a parenthesised note) and says so: only an ellipsis, an ellipsis with words like "existing",
"rest" or "unchanged", or an opening like "rest of" / "existing" about code ("rest of the method unchanged",
"existing code here"). Ordinary code (Python's ``...``, ``[...args]``) and ordinary comments ("TODO: handle the
rest of the file") are not.
"""

from __future__ import annotations

import re

_OPENERS = ("//", "#", "/*", "*", "<!--", "--", ";", "(", "{", "[")
_LEADING_MARK = re.compile(r"^(?:\{?/\*+|//+|#+|\*+|<!--|--|;+|[(\[{])\s*")
_TRAILING_MARK = re.compile(r"\s*(?:\*+/\}?|-->|[)\]}])$")
_ELLIPSIS = re.compile(r"\.{3,}|…")
_FILLER = re.compile(r"\b(?:existing|rest|remaining|remainder|unchanged|omitted|same|other|previous|more|code)\b",
                     re.IGNORECASE)
_OPENING = re.compile(r"^(?:the\s+)?(?:rest|remainder)\s+of\b|^(?:existing|remaining|other|previous|unchanged|"
                      r"omitted)\b", re.IGNORECASE)
_ABOUT_CODE = re.compile(r"\b(?:code|methods?|functions?|class(?:es)?|file|implementation|body|logic|lines|"
                         r"contents?|imports|fields|properties|tests|cases|members|unchanged|same)\b", re.IGNORECASE)
#: A comment longer than this is prose, not a stand-in.
_MAX_WORDS_CHARS = 60


def is_placeholder(line: str) -> bool:
    stripped = line.strip()
    if not stripped.startswith(_OPENERS):
        return False
    text = stripped
    while True:  # `{/* ... */}`, `# (...)`: peel every comment mark and bracket off both ends
        peeled = _TRAILING_MARK.sub("", _LEADING_MARK.sub("", text)).strip()
        if peeled == text:
            break
        text = peeled
    has_ellipsis = bool(_ELLIPSIS.search(text))
    words = _ELLIPSIS.sub(" ", text).strip()
    if not words:
        return has_ellipsis
    if len(words) > _MAX_WORDS_CHARS:
        return False
    if has_ellipsis:
        return bool(_FILLER.search(words))
    return bool(_OPENING.search(words)) and bool(_ABOUT_CODE.search(words))


def new_placeholders(new: str, old: str) -> list[tuple[int, str]]:
    """(1-based line, text) of each placeholder line of ``new`` that ``old`` does not have too."""
    known = {line.strip() for line in old.split("\n")}
    return [(number, line.strip()) for number, line in enumerate(new.split("\n"), 1)
            if line.strip() not in known and is_placeholder(line)]
