"""web_fetch and web_search: reading the web from a coding session.

- ``web_fetch(url, prompt?)`` GETs a page with httpx and gives the model readable text: HTML as Markdown
  (:mod:`anvil.core.tools.html_text`), Markdown, JSON and other text as they are, binaries refused. The body is
  read up to ``max_bytes`` and the text cut at ``max_chars`` with a note. Redirects on the same site are
  followed (at most :data:`MAX_REDIRECTS`); a redirect to another host is reported instead, because the person
  approved a domain, not wherever it points. It asks approval per domain: ``rule_subject(args)`` is
  ``domain:<host>``, and :func:`web_rule_matches` tells whether a rule such as ``web_fetch(domain:docs.python.org)``
  or ``web_fetch(domain:*.python.org)`` covers a call.
- ``web_search(query)`` goes through a search API: Brave Search (``BRAVE_API_KEY``) or Tavily
  (``TAVILY_API_KEY``), keys from the config or the environment. Without a key it is not offered at all.

For the lead: ``web_tools(os.environ, settings.web)`` returns the tools to add to the registry, and Settings gets
``web: WebConfig``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import html
import os
import re
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from anvil import __version__
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from anvil.core.tools.html_text import body_to_text, fit_text, is_binary_type

if TYPE_CHECKING:  # httpx costs ~90 ms to import: only when something is fetched
    import httpx

MAX_REDIRECTS = 5
USER_AGENT = f"Mozilla/5.0 (compatible; anvil/{__version__}; terminal coding assistant)"
ACCEPT = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5"
SNIPPET_CHARS = 300


class WebConfig(BaseModel):
    """The web tools' settings (a ``[web]`` table)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    fetch: bool = True
    """Offer web_fetch to the model (each domain still needs approval)."""
    search_provider: Literal["brave", "tavily"] | None = None
    """The search API for web_search; unset: the first with a key, Brave then Tavily."""
    brave_api_key: str | None = None
    """Brave Search API key; prefer the BRAVE_API_KEY environment variable over writing it in a file."""
    tavily_api_key: str | None = None
    """Tavily API key; prefer the TAVILY_API_KEY environment variable over writing it in a file."""
    search_base_url: str | None = None
    """The search API's endpoint URL, to go through a proxy or a compatible service."""
    max_results: int = Field(8, ge=1, le=20)
    """Search results given to the model."""
    timeout: float = Field(30.0, gt=0, le=300)
    """Seconds a fetch or a search may take in all."""
    max_bytes: int = Field(5_000_000, ge=10_000)
    """Bytes of a page's body that are read; the rest is never downloaded."""
    max_chars: int = Field(40_000, ge=1_000)
    """Characters of a page's text given to the model; longer pages are cut with a note."""


class WebFetchArgs(ToolArgs):
    url: str = Field(description="The page's full http(s) URL. A bare host name gets https://.")
    prompt: str | None = Field(default=None, description="What you are looking for in the page, e.g. \"the "
                               "default timeout and how to change it\"; keeps your reading focused.")


class WebSearchArgs(ToolArgs):
    query: str = Field(description="Search words, as you would type them into a search engine.")


# -- URLs and approval rules ------------------------------------------------------------------------------


def normalize_url(url: str) -> httpx.URL:
    """The URL to fetch, or a ToolError saying what is wrong with it. The one parser for approval rules and
    fetching alike, so the host a rule approved is the host that is contacted."""
    import httpx

    text = url.strip()
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        text = "https://" + text  # "docs.python.org/3/" is what people and models often write
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ToolError(f"'{url}' is not a valid URL ({exc}). Give a full address such as "
                        "https://docs.python.org/3/library/json.html.") from exc
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"web_fetch reads http and https URLs only, not {parsed.scheme}: ({url}). For local files "
                        "use read_file.")
    if not parsed.host:
        raise ToolError(f"'{url}' has no host name. Give a full address such as https://example.com/page.")
    return parsed


def fetch_host(args: Any) -> str | None:
    """The lower-case host a web_fetch call goes to (args: WebFetchArgs or a dict), None when the URL is bad."""
    url = args.get("url") if isinstance(args, Mapping) else getattr(args, "url", None)
    if not isinstance(url, str):
        return None
    try:
        return normalize_url(url).host.lower().rstrip(".")
    except ToolError:
        return None


def web_rule_matches(rule_arg: str, args: Any) -> bool:
    """Whether the argument of a ``web_fetch(...)`` rule covers a call: ``*``, ``domain:docs.python.org``
    (that host only) or ``domain:*.python.org`` (a glob on the host)."""
    rule = rule_arg.strip()
    if rule == "*":
        return True
    if not rule.lower().startswith("domain:"):
        return False
    host = fetch_host(args)
    return host is not None and fnmatchcase(host, rule[len("domain:"):].strip().lower().rstrip("."))


def _same_site(a: str, b: str) -> bool:
    strip = lambda host: host.lower().removeprefix("www.")  # noqa: E731 - example.com -> www.example.com is one site
    return strip(a) == strip(b)


# -- errors -----------------------------------------------------------------------------------------------


def _network_error(exc: Exception, url: httpx.URL, timeout: float) -> ToolError:
    import httpx

    host = url.host
    text = str(exc) or type(exc).__name__
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return ToolError(f"Fetching {url} timed out after {timeout:g}s. The site may be slow or down: try again "
                         "later, or another source.")
    chain: list[BaseException] = []  # httpx wraps the OS error that says what really happened
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    lowered = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, socket.gaierror) for e in chain) or any(s in lowered for s in (
            "name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")):
        return ToolError(f"The host name {host} could not be resolved (DNS): check the URL for typos. If it is "
                         "right, this machine may be offline.")
    if any(isinstance(e, ssl.SSLError) for e in chain) or "certificate" in lowered or "ssl:" in lowered:
        return ToolError(f"The secure connection to {host} failed ({text}): its TLS certificate is invalid or "
                         "the connection is intercepted. anvil does not skip the check; use another source.")
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in lowered:
        port = url.port or (443 if url.scheme == "https" else 80)
        return ToolError(f"{host} refused the connection on port {port}: nothing is "
                         "listening there. Check the URL (and, for a local server, that it runs).")
    return ToolError(f"Fetching {url} failed: {text}. Check the URL, or try again later.")


def _status_error(status: int, reason: str, url: httpx.URL) -> ToolError:
    head = f"{url} answered HTTP {status}{' ' + reason if reason else ''}"
    if status in (404, 410):
        hint = ("the page does not exist (any more). Check the URL for typos; the site's index page or a web "
                "search can find where it moved.")
    elif status in (401, 403, 407):
        hint = ("the page needs a login, or the site refuses automated clients. Ask the person to paste what "
                "you need, or use another source.")
    elif status == 429:
        hint = "the site is rate-limiting requests. Wait before fetching from it again, or use another source."
    elif status >= 500:
        hint = "the site has a problem on its side. Try again later, or use another source."
    else:
        hint = "the request was not accepted. Check the URL."
    return ToolError(f"{head}: {hint}")


# -- fetching ---------------------------------------------------------------------------------------------


@dataclass
class Page:
    url: httpx.URL
    content_type: str
    charset: str | None
    body: bytes
    cut_bytes: bool


def _client(config: WebConfig) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(config.timeout), follow_redirects=False,
                             headers={"User-Agent": USER_AGENT, "Accept": ACCEPT})


async def _download(url: httpx.URL, config: WebConfig) -> Page | str:
    """The page, or (for a redirect to another host) the text to tell the model."""
    async with _client(config) as client:
        for _ in range(MAX_REDIRECTS + 1):
            async with client.stream("GET", url) as response:
                if response.is_redirect and "location" in response.headers:
                    target = url.join(response.headers["location"])
                    if target.host and not _same_site(url.host, target.host):
                        return (f"{url} redirects (HTTP {response.status_code}) to another host: {target}\n"
                                f"It was not followed, because approval is per domain. To read it, call web_fetch "
                                f"again with url=\"{target}\".")
                    url = target
                    continue
                if response.status_code >= 400:
                    raise _status_error(response.status_code, response.reason_phrase, url)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if is_binary_type(content_type):
                    raise ToolError(f"{url} is {content_type}, not text; web_fetch reads web pages and text "
                                    "only. Download it with run_command (curl -o) if the person agrees.")
                body = bytearray()
                cut = False
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > config.max_bytes:
                        del body[config.max_bytes:]
                        cut = True
                        break
                return Page(url, content_type, response.charset_encoding, bytes(body), cut)
    raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times; it may loop. Try the final address in a "
                    "browser, or another source.")


class WebFetch(Tool):
    name = "web_fetch"
    description = (
        "Fetch a web page over http(s) and read it as text: HTML comes back as Markdown (headings, lists, links, "
        "code blocks, tables), JSON and plain text as they are. Use it for documentation, changelogs, issues and "
        "API references. Long pages are cut (a note says so): prefer the URL of the section you need. A redirect "
        "to another host is reported, not followed. Set prompt to what you are looking for in the page. Each new "
        "domain needs the person's approval."
    )
    Args = WebFetchArgs
    read_only = True  # it changes nothing on this machine

    def __init__(self, config: WebConfig | None = None) -> None:
        self.config = config or WebConfig()

    def needs_approval(self, args: Any, ctx: ToolContext) -> bool:
        return True

    def rule_subject(self, args: Any) -> str:
        """What approval rules match against: ``domain:<host>``."""
        return f"domain:{fetch_host(args) or '?'}"

    def phase(self, args: Any) -> str:
        return f"Fetching {fetch_host(args) or 'a page'}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        import httpx

        url = normalize_url(args.url)
        try:
            async with asyncio.timeout(self.config.timeout):
                page = await _download(url, self.config)
        except ToolError:
            raise
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            raise _network_error(exc, url, self.config.timeout) from exc
        if isinstance(page, str):
            return ToolResult(page, summary="redirects to another host")
        # parsing megabytes of HTML takes a while: keep the event loop (and the TUI) free meanwhile
        title, text = await asyncio.to_thread(body_to_text, page.body, page.content_type, page.charset,
                                              str(page.url))
        prompt = (args.prompt or "").strip()
        header = [f"URL: {page.url}"] + ([f"Title: {title}"] if title else [])
        if prompt:
            header.append(f"What to look for: {prompt} (report what the page says about it, or that it says "
                          "nothing)")
        text, notes = fit_text(text.strip(), prompt, self.config.max_chars)
        cut = bool(notes)
        if page.cut_bytes:
            notes.append(f"[Only the first {self.config.max_bytes:,} bytes of the page were downloaded.]")
        body = text or "(The page has no readable text; it may need JavaScript to show its content.)"
        output = "\n".join(header) + "\n\n" + body + ("\n\n" + "\n".join(notes) if notes else "")
        size = f"{len(text):,} chars{' (cut)' if cut or page.cut_bytes else ''}"
        return ToolResult(output, summary=f"{page.url.host}: {size}",
                          data={"url": str(page.url), "title": title, "truncated": cut or page.cut_bytes})


# -- searching --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class SearchProvider:
    """A search API: Brave (GET, X-Subscription-Token) or Tavily (POST, bearer token)."""

    name: Literal["brave", "tavily"]
    api_key: str
    base_url: str

    @property
    def label(self) -> str:
        return _LABELS[self.name]

    async def search(self, client: httpx.AsyncClient, query: str, count: int) -> list[SearchHit]:
        if self.name == "brave":
            response = await client.get(self.base_url, params={"q": query, "count": count},
                                        headers={"Accept": "application/json", "X-Subscription-Token": self.api_key})
        else:
            response = await client.post(self.base_url, json={"query": query, "max_results": count},
                                         headers={"Authorization": f"Bearer {self.api_key}"})
        if response.status_code in (401, 403):
            raise ToolError(f"{self.label} rejected the API key (HTTP {response.status_code}). The person should "
                            f"check {self.name.upper()}_API_KEY (or web.{self.name}_api_key in the config).")
        if response.status_code == 429:
            raise ToolError(f"{self.label} says the rate limit or quota is used up (HTTP 429). Wait a moment, or "
                            "fetch a known documentation page with web_fetch instead.")
        if response.status_code >= 400:
            raise ToolError(f"{self.label} answered HTTP {response.status_code}: {response.text[:200]}. Try other "
                            "search words, or again later.")
        try:
            data = response.json()
        except ValueError as exc:
            raise ToolError(f"{self.label} sent a reply that is not JSON; check web.search_base_url.") from exc
        if self.name == "brave":
            items = ((data.get("web") or {}).get("results") or []) if isinstance(data, dict) else []
            field = "description"
        else:
            items = (data.get("results") or []) if isinstance(data, dict) else []
            field = "content"
        return [SearchHit(_plain(item.get("title")), str(item.get("url") or ""), _plain(item.get(field)))
                for item in items if isinstance(item, dict) and item.get("url")]


def _plain(value: Any) -> str:
    """Text without the <strong> tags and entities search APIs put in titles and snippets."""
    text = html.unescape(re.sub(r"<[^>]+>", "", str(value or "")))
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rstrip() + "…"


_DEFAULT_URLS = {"brave": "https://api.search.brave.com/res/v1/web/search", "tavily": "https://api.tavily.com/search"}
_LABELS = {"brave": "Brave Search", "tavily": "Tavily"}


def search_provider(environ: Mapping[str, str], config: WebConfig) -> SearchProvider | None:
    """The configured search API, or None when no key is set (then web_search is not offered)."""
    keys = {"brave": config.brave_api_key or environ.get("BRAVE_API_KEY") or environ.get("BRAVE_SEARCH_API_KEY"),
            "tavily": config.tavily_api_key or environ.get("TAVILY_API_KEY")}
    order: tuple[Literal["brave", "tavily"], ...] = ("brave", "tavily")
    for name in (config.search_provider,) if config.search_provider else order:
        key = (keys[name] or "").strip()
        if key:
            return SearchProvider(name, key, config.search_base_url or _DEFAULT_URLS[name])
    return None


class WebSearch(Tool):
    name = "web_search"
    description = (
        "Search the web and get the top results (title, URL, snippet). Use it to find documentation, error "
        "messages, release notes or a library's current API; then read a result with web_fetch. Snippets are "
        "short and may be out of date: fetch the page before relying on it."
    )
    Args = WebSearchArgs
    read_only = True

    def __init__(self, provider: SearchProvider, config: WebConfig | None = None) -> None:
        self.provider = provider
        self.config = config or WebConfig()

    def needs_approval(self, args: Any, ctx: ToolContext) -> bool:
        return True  # the query leaves the machine; "always allow" (web_search(*)) makes it one question

    def phase(self, args: Any) -> str:
        return f"Searching the web for {args.query.strip()[:60]!r}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        import httpx

        query = " ".join(args.query.split())
        if not query:
            raise ToolError("The search query is empty. Give a few words describing what to find.")
        if len(query) > 400:
            raise ToolError(f"The query is {len(query)} characters; search APIs take at most 400. Use a few key "
                            "words instead of a sentence or a pasted error log.")
        try:
            async with asyncio.timeout(self.config.timeout), _client(self.config) as client:
                hits = await self.provider.search(client, query, self.config.max_results)
        except ToolError:
            raise
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            problem = _network_error(exc, httpx.URL(self.provider.base_url), self.config.timeout)
            raise ToolError(f"{self.provider.label} could not be reached. {problem}") from exc
        hits = hits[: self.config.max_results]
        if not hits:
            return ToolResult(f"No results for \"{query}\" ({self.provider.label}). Try fewer or other words.",
                              summary="no results")
        lines = [f"Results for \"{query}\" ({self.provider.label}):"]
        for number, hit in enumerate(hits, start=1):
            lines += [f"{number}. {hit.title or '(untitled)'}", f"   {hit.url}"]
            if hit.snippet:
                lines.append(f"   {hit.snippet}")
        return ToolResult("\n".join(lines), summary=f"{len(hits)} result{'s' if len(hits) != 1 else ''}",
                          data={"results": [dataclasses.asdict(hit) for hit in hits]})


def web_tools(environ: Mapping[str, str] | None = None, config: WebConfig | None = None) -> list[Tool]:
    """The web tools to offer: web_fetch unless turned off, web_search only when a search API key is set."""
    config = config or WebConfig()
    tools: list[Tool] = [WebFetch(config)] if config.fetch else []
    provider = search_provider(os.environ if environ is None else environ, config)
    if provider is not None:
        tools.append(WebSearch(provider, config))
    return tools
