"""web_fetch and web_search: reading the web from a coding session.

- ``web_fetch(url, prompt?)`` GETs a page with httpx (:mod:`anvil.core.tools.web.http_client`) and gives the model
  readable text: HTML as Markdown (:mod:`anvil.core.tools.web.html_text`), Markdown, JSON and other text as they are,
  binaries refused. The body is read up to ``max_bytes`` and the text cut at ``max_chars`` with a note. Redirects
  on the same site are followed; a redirect to another host is reported instead, because the person approved a
  domain, not wherever it points. It asks approval per domain: ``rule_subject(args)`` is ``domain:<host>``, which
  the approval policy matches against rules such as ``web_fetch(domain:docs.python.org)`` or
  ``web_fetch(domain:*.python.org)``.
- ``web_search(query)`` goes through a search API: Brave Search (``BRAVE_API_KEY``) or Tavily
  (``TAVILY_API_KEY``), keys from the config or the environment. Without a key it is not offered at all.

:func:`web_tools` returns the tools the settings (``[web]``, :class:`WebConfig`) and the environment allow.
"""

from __future__ import annotations

import asyncio
import dataclasses
import html
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.web.html_text import body_to_text, fit_text
from anvil.core.tools.web.http_client import download, http_client, network_error, normalize_url

if TYPE_CHECKING:  # httpx costs ~90 ms to import: only when something is fetched
    import httpx

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


# -- approval rules ---------------------------------------------------------------------------------------


def fetch_host(args: Any) -> str | None:
    """The lower-case host a web_fetch call goes to (args: WebFetchArgs or a dict), None when the URL is bad."""
    url = args.get("url") if isinstance(args, Mapping) else getattr(args, "url", None)
    if not isinstance(url, str):
        return None
    try:
        return normalize_url(url).host.lower().rstrip(".")
    except ToolError:
        return None


# -- fetching ---------------------------------------------------------------------------------------------


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
    kind = "fetch"  # it changes nothing on this machine
    approval = "rule"  # per domain: "always allow" saves web_fetch(domain:<host>)

    def __init__(self, config: WebConfig | None = None) -> None:
        self.config = config or WebConfig()

    def rule_subject(self, args: Any) -> str:
        """``domain:<host>``: a rule ``web_fetch(domain:docs.python.org)`` allows that host only, and
        ``web_fetch(domain:*.python.org)`` its subdomains."""
        return f"domain:{fetch_host(args) or '?'}"

    def phase(self, args: Any) -> str:
        return f"Fetching {fetch_host(args) or 'a page'}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        import httpx

        url = normalize_url(args.url)
        try:
            async with asyncio.timeout(self.config.timeout):
                page = await download(url, self.config.timeout, self.config.max_bytes)
        except ToolError:
            raise
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            raise network_error(exc, url, self.config.timeout) from exc
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
    kind = "fetch"
    approval = "rule"  # the query leaves the machine; "always allow" (web_search(*)) makes it one question

    def __init__(self, provider: SearchProvider, config: WebConfig | None = None) -> None:
        self.provider = provider
        self.config = config or WebConfig()

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
            async with asyncio.timeout(self.config.timeout), http_client(self.config.timeout) as client:
                hits = await self.provider.search(client, query, self.config.max_results)
        except ToolError:
            raise
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            problem = network_error(exc, httpx.URL(self.provider.base_url), self.config.timeout)
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
