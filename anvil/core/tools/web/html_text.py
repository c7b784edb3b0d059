"""A downloaded body as text for web_fetch: HTML as readable Markdown, other text as it is, binaries refused.

The model needs a page's words, structure and links, not its chrome. So: parse with beautifulsoup4 (the
stdlib ``html.parser`` backend, so no C extension is needed), drop what is never content (scripts, styles,
navigation, footers, forms, cookie banners, hidden elements, permalink pilcrows), keep the ``<main>`` or
``<article>`` when the page has one that holds a good share of the text, make links absolute, and convert with
markdownify (headings, lists, links, tables, code blocks with their language). Both libraries are MIT and
imported only when a page is converted, so starting anvil never pays for them.

A page longer than the budget is fitted by :func:`fit_text`: with a prompt, the page's opening plus the
sections that mention the prompt's words (a cheap, model-free focus); without one, the beginning.

Conversion is synchronous and CPU-bound: web_fetch runs it in a worker thread.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin

from anvil.core.tools.errors import ToolError

# Content types refused without reading the body; the rest is sniffed for NUL bytes.
_BINARY_TYPES = re.compile(r"^(image|audio|video|font|model)/|^application/(pdf|zip|gzip|x-tar|x-7z|x-rar|"
                           r"vnd\.|msword|wasm|x-executable|x-msdownload|java-archive)", re.IGNORECASE)
_TEXT_TYPES = re.compile(r"^text/|[/+](json|xml|javascript|ecmascript|yaml|x-yaml|toml|x-sh|sql|graphql)\b",
                         re.IGNORECASE)
#: elements that never hold a page's content
NOISE_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "form",
              "button", "input", "select", "textarea", "nav", "footer", "aside", "dialog", "link", "meta")
NOISE_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "dialog", "menu",
                         "menubar", "toolbar"})
# class/id words of page furniture; matched as whole words of the attribute so "shared-state" stays
_NOISE_WORDS = re.compile(r"(?:^|[\s_-])(cookie|cookies|consent|advert|advertisement|ads|sidebar|breadcrumbs?|"
                          r"skip-link|skiplink|share|social|newsletter)(?:$|[\s_-])", re.IGNORECASE)
_PERMALINK_TEXT = frozenset({"¶", "#", "§", "🔗", "link"})
_LANGUAGE_CLASS = re.compile(r"^(?:language|lang|highlight-source|highlight)-([A-Za-z0-9_+#.-]+)$")
#: a main/article is used instead of the whole body when it holds at least this share of the text
MAIN_SHARE = 0.3


class MissingHtmlLibraries(ImportError):
    """beautifulsoup4 or markdownify is not installed."""


def is_binary_type(content_type: str) -> bool:
    """A media type that is never text (images, archives, PDFs...): refused before the body is read."""
    return bool(_BINARY_TYPES.search(content_type))


def body_to_text(body: bytes, content_type: str, charset: str | None, url: str) -> tuple[str, str]:
    """(title, text) of a response body; a ToolError when it is not text."""
    head = body[:512].lstrip().lower()
    if "html" in content_type or (not content_type and head.startswith((b"<!doctype html", b"<html"))):
        try:
            return html_to_markdown(body, url, charset)
        except MissingHtmlLibraries as exc:
            raise ToolError(str(exc)) from exc
    textual = not content_type or content_type == "application/octet-stream" or _TEXT_TYPES.search(content_type)
    if b"\x00" in body[:8192] or not textual:
        raise ToolError(f"{url} is {content_type or 'binary data'}, not text; web_fetch reads web pages and text "
                        "only. Download it with run_command (curl -o) if the person agrees.")
    try:
        return "", body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset name Python does not know: UTF-8 is the best guess on the web
        return "", body.decode("utf-8", errors="replace")


def html_to_markdown(html: str | bytes, base_url: str, encoding: str | None = None) -> tuple[str, str]:
    """(title, markdown) of an HTML document; ``base_url`` makes relative links absolute."""
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # a broken install: say what to do rather than crash the tool
        raise MissingHtmlLibraries("beautifulsoup4 and markdownify are needed to read HTML pages; install them "
                                   "with `pip install beautifulsoup4 markdownify` (anvil depends on both).") from exc
    soup = BeautifulSoup(html, "html.parser", from_encoding=encoding if isinstance(html, bytes) else None)
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    base = soup.find("base", href=True)
    if base is not None:
        base_url = urljoin(base_url, str(base["href"]))
    _drop_noise(soup)
    root = _main_content(soup)
    _fix_links(root, base_url)
    text = _converter()(root)
    return title, tidy(text)


def _drop_noise(soup: Any) -> None:
    for tag in soup.find_all(NOISE_TAGS):
        tag.decompose()
    for tag in soup.find_all(True):
        if tag.decomposed:
            continue
        attrs = tag.attrs or {}
        role = str(attrs.get("role", "")).lower()
        style = str(attrs.get("style", "")).replace(" ", "").lower()
        furniture = " ".join([*attrs.get("class", []), str(attrs.get("id", ""))])
        if (role in NOISE_ROLES or "hidden" in attrs or attrs.get("aria-hidden") == "true"
                or "display:none" in style or (tag.name not in ("main", "article", "body", "html")
                                               and _NOISE_WORDS.search(furniture))):
            tag.decompose()


def _main_content(soup: Any) -> Any:
    body = soup.body or soup
    total = len(body.get_text(" ", strip=True)) or 1
    for selector in ("main", "[role=main]", "article"):
        found = body.select(selector)
        if len(found) == 1 and len(found[0].get_text(" ", strip=True)) >= MAIN_SHARE * total:
            return found[0]
    # no main part: the site header (logo, menu) is noise, unlike an article's own header
    for header in body.find_all("header"):
        if header.find_parent(["article", "main"]) is None:
            header.decompose()
    return body


def _fix_links(root: Any, base_url: str) -> None:
    for link in root.find_all("a"):
        href = str(link.get("href") or "").strip()
        text = link.get_text(strip=True)
        if text in _PERMALINK_TEXT or "headerlink" in link.get("class", []):
            link.decompose()  # the pilcrow next to a heading: noise for a reader
        elif not href or href.startswith(("#", "javascript:", "data:", "mailto:")):
            link.unwrap()  # keep the words, drop a target the model cannot fetch
        else:
            link["href"] = urljoin(base_url, href)


def _code_language(pre: Any) -> str:
    """The language of a code block, from the classes highlighters put on it or around it."""
    candidates = [pre, pre.find("code"), pre.parent, pre.parent.parent if pre.parent else None]
    for node in candidates:
        if node is None or not hasattr(node, "get"):
            continue
        classes = node.get("class") or []
        for cls in classes:
            match = _LANGUAGE_CLASS.match(cls)
            if match and match.group(1) not in ("text", "default", "none", "plaintext"):
                return match.group(1).lower()
        if "sourceCode" in classes:  # pandoc: class="sourceCode python"
            rest = [c for c in classes if c != "sourceCode"]
            if rest:
                return rest[0].lower()
    return ""


@lru_cache(maxsize=1)
def _converter() -> Any:
    """A markdownify converter, built on first use (the import is lazy)."""
    try:
        from markdownify import MarkdownConverter
    except ImportError as exc:
        raise MissingHtmlLibraries("markdownify is needed to read HTML pages; install it with `pip install "
                                   "markdownify` (anvil depends on it).") from exc

    class PageConverter(MarkdownConverter):  # type: ignore[misc]
        def convert_img(self, el: Any, text: str, parent_tags: set[str]) -> str:
            alt = " ".join(str(el.get("alt") or "").split())
            return f"(image: {alt})" if alt else ""  # the picture cannot be read; its description can

        def convert_pre(self, el: Any, text: str, parent_tags: set[str]) -> str:
            converted: str = super().convert_pre(el, text, parent_tags)
            runs = re.findall(r"`{3,}", text)
            if not runs:
                return converted
            # a code block that shows a fence (Markdown docs do) needs a longer fence around it
            fence = "`" * (max(map(len, runs)) + 1)
            inner = converted.strip("\n")
            return "\n\n" + fence + inner[3:-3] + fence + "\n\n"

    options = {"heading_style": "ATX", "bullets": "-", "escape_underscores": False, "escape_asterisks": False,
               "code_language_callback": _code_language, "table_infer_header": True, "strip_document": "strip"}
    return lambda node: PageConverter(**options).convert_soup(node)


def tidy(text: str) -> str:
    """Trailing spaces off, runs of blank lines down to one, non-breaking spaces made plain."""
    lines = [line.rstrip() for line in text.replace("\xa0", " ").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


_STOPWORDS = frozenset({"the", "and", "for", "with", "how", "what", "when", "where", "which", "that", "this",
                        "from", "into", "about", "does", "are", "was", "were", "can", "you", "your", "its", "not",
                        "any", "all", "use", "using", "find", "look", "show"})


def _sections(text: str) -> list[str]:
    """The text split before each Markdown heading (headings inside code blocks do not count)."""
    sections: list[list[str]] = [[]]
    fence = ""  # the open code fence, if any
    for line in text.split("\n"):
        run = re.match(r"`{3,}", line)
        if run and not fence:
            fence = run.group()
        elif run and line.strip() == fence:
            fence = ""
        elif not fence and line.startswith("#") and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    return ["\n".join(lines).strip() for lines in sections if "".join(lines).strip()]


def focus(text: str, prompt: str, limit: int) -> tuple[str, int, int] | None:
    """For a page longer than ``limit``: its opening plus the sections that mention the prompt's words most, in
    page order, within about ``limit``. Returns (text, sections shown, sections in all), or None when no section
    mentions them (then a plain cut is as good as any)."""
    words = {w for w in re.findall(r"[a-z0-9_][a-z0-9_.-]{2,}", prompt.lower()) if w not in _STOPWORDS}
    sections = _sections(text)
    if not words or len(sections) < 2:
        return None

    def score(section: str) -> int:
        heading, _, body = section.partition("\n")
        return sum(3 * heading.lower().count(w) + min(body.lower().count(w), 10) for w in words)

    scores = [score(section) for section in sections]
    ranked = sorted((i for i in range(1, len(sections)) if scores[i]), key=lambda i: -scores[i])
    if not ranked:
        return None
    opening = limit // 4  # the page's opening says what the page is; the rest of the room goes to matches
    shown = {0: sections[0] if len(sections[0]) <= opening else sections[0][:opening].rstrip() + " …"}
    used = len(shown[0])
    for index in ranked:
        room = limit - used
        if len(sections[index]) <= room:
            shown[index] = sections[index]
        elif index == ranked[0] and room > 200:  # the best match, too long to fit: its beginning
            shown[index] = sections[index][:room].rstrip() + " …"
        else:
            continue
        used += len(shown[index])
    parts: list[str] = []
    for index in range(len(sections)):
        if index in shown:
            parts.append(shown[index])
        elif parts[-1] != "[…]":
            parts.append("[…]")  # where sections were left out
    return "\n\n".join(parts), len(shown), len(sections)


def fit_text(text: str, prompt: str, limit: int) -> tuple[str, list[str]]:
    """The text within ``limit`` characters, and notes saying what was left out: the sections about the prompt
    when there is one and some mention it, else the beginning, ended on a paragraph."""
    if len(text) <= limit:
        return text, []
    focused = focus(text, prompt, limit) if prompt else None
    if focused is not None:
        shown, count, total = focused
        return shown, [f"[The page has {len(text):,} characters, more than the {limit:,} shown: these are its "
                       f"opening and the {count - 1} of its {total} sections that mention what you look for; "
                       "[…] marks sections left out.]"]
    end = text.rfind("\n\n", int(limit * 0.8), limit)  # end on a paragraph when one ends near the limit
    return text[: end if end > 0 else limit].rstrip(), [
        f"[Cut: the page has {len(text):,} characters and only the first {limit:,} are shown. Fetch the URL of "
        "the section you need, or give prompt to get the sections about it.]"]
