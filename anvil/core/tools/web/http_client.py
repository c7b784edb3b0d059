"""HTTP for the web tools: the one URL parser, a client that follows no redirect on its own, a bounded
download, and network and HTTP errors told in words the model can act on.

Redirects on the same site are followed (at most :data:`MAX_REDIRECTS`); a redirect to another host is returned
as text instead, because the person approved a domain, not wherever it points. Nothing here knows about tools,
approval rules or settings: :mod:`anvil.core.tools.web.web_tools` passes in the limits it was configured with.
"""

from __future__ import annotations

import re
import socket
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from anvil import __version__
from anvil.core.tools.errors import ToolError
from anvil.core.tools.web.html_text import is_binary_type

if TYPE_CHECKING:  # httpx costs ~90 ms to import: only when something is fetched
    import httpx

MAX_REDIRECTS = 5
USER_AGENT = f"Mozilla/5.0 (compatible; anvil/{__version__}; terminal coding assistant)"
ACCEPT = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5"


# -- URLs -------------------------------------------------------------------------------------------------


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


def same_site(a: str, b: str) -> bool:
    strip = lambda host: host.lower().removeprefix("www.")  # noqa: E731 - example.com -> www.example.com is one site
    return strip(a) == strip(b)


# -- errors -----------------------------------------------------------------------------------------------


def network_error(exc: Exception, url: httpx.URL, timeout: float) -> ToolError:
    """A request that failed below HTTP (timeout, DNS, TLS, refused), told so the model knows what to try."""
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


def status_error(status: int, reason: str, url: httpx.URL) -> ToolError:
    """An HTTP error status, with what it usually means for a page the model wanted to read."""
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
    """A downloaded page; ``url`` is where it was found after same-site redirects."""

    url: httpx.URL
    content_type: str
    charset: str | None
    body: bytes
    cut_bytes: bool


def http_client(timeout: float) -> httpx.AsyncClient:
    """A client that follows no redirect by itself: :func:`download` decides which ones are safe to follow."""
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False,
                             headers={"User-Agent": USER_AGENT, "Accept": ACCEPT})


async def download(url: httpx.URL, timeout: float, max_bytes: int) -> Page | str:
    """The page (its body cut at ``max_bytes``), or (for a redirect to another host) the text to tell the model."""
    async with http_client(timeout) as client:
        for _ in range(MAX_REDIRECTS + 1):
            async with client.stream("GET", url) as response:
                if response.is_redirect and "location" in response.headers:
                    target = url.join(response.headers["location"])
                    if target.host and not same_site(url.host, target.host):
                        return (f"{url} redirects (HTTP {response.status_code}) to another host: {target}\n"
                                f"It was not followed, because approval is per domain. To read it, call web_fetch "
                                f"again with url=\"{target}\".")
                    url = target
                    continue
                if response.status_code >= 400:
                    raise status_error(response.status_code, response.reason_phrase, url)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if is_binary_type(content_type):
                    raise ToolError(f"{url} is {content_type}, not text; web_fetch reads web pages and text "
                                    "only. Download it with run_command (curl -o) if the person agrees.")
                body = bytearray()
                cut = False
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        del body[max_bytes:]
                        cut = True
                        break
                return Page(url, content_type, response.charset_encoding, bytes(body), cut)
    raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times; it may loop. Try the final address in a "
                    "browser, or another source.")
