"""web_fetch and web_search against a local HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.tools.base import ToolContext, ToolRegistry
from anvil.core.tools.errors import ToolError
from anvil.core.tools.web.http_client import network_error
from anvil.core.tools.web.web_tools import (
    WebConfig,
    WebFetch,
    WebFetchArgs,
    WebSearch,
    WebSearchArgs,
    search_provider,
    web_tools,
)

PAGE = """<!doctype html>
<html><head><title>Widget   Guide</title><script>var tracking = 1;</script><style>body{color:red}</style></head>
<body>
<header><a href="/">WidgetCo</a></header>
<nav><a href="/pricing">Pricing</a> <a href="/blog">Blog</a></nav>
<div class="cookie-consent">We use cookies. <button>OK</button></div>
<main>
  <h1>Installing widgets<a class="headerlink" href="#installing">¶</a></h1>
  <p>Read the <a href="setup.html">setup notes</a> or the <a href="https://other.example/faq">FAQ</a> first.</p>
  <h2>Steps</h2>
  <ol><li>Download</li><li>Run <code>widget --init</code></li></ol>
  <div class="highlight-python"><pre>import widget
widget.start(port=8080)
</pre></div>
  <table><tr><th>Option</th><th>Default</th></tr><tr><td>port</td><td>8080</td></tr></table>
  <p style="display: none">invisible text</p>
</main>
<footer>Copyright WidgetCo. <a href="/privacy">Privacy</a></footer>
</body></html>"""


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class FakeWeb:
    """A local web server: tests put routes in, and read the requests it saw."""

    base: str
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def add(self, path: str, body: str | bytes = b"", status: int = 200, content_type: str = "text/html",
            **headers: str) -> str:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = Route(status, data, {"Content-Type": content_type, **headers})
        return self.base + path


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    fake: FakeWeb

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            fake.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                  "body": self.rfile.read(length) if length else b""})
            route = fake.routes.get(urlsplit(self.path).path)
            if route is None:
                route = Route(404, b"<h1>Not found</h1>", {"Content-Type": "text/html"})
            time.sleep(route.delay)
            self.send_response(route.status)
            for key, value in route.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client hit its size cap
                self.wfile.write(route.body)

        do_GET = do_POST = _serve

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeWeb(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path, data_dir=tmp_path / "data")


async def fetch(ctx: ToolContext, url: str, prompt: str | None = None, **config: Any) -> Any:
    return await WebFetch(WebConfig(**config)).run(WebFetchArgs(url=url, prompt=prompt), ctx)


# -- web_fetch ---------------------------------------------------------------------------------------------


async def test_html_page_becomes_markdown_without_the_chrome(web: FakeWeb, ctx: ToolContext) -> None:
    url = web.add("/docs/guide.html", PAGE)
    result = await fetch(ctx, url)
    out = result.output
    assert result.ok and out.startswith(f"URL: {url}\nTitle: Widget Guide\n\n")
    assert "# Installing widgets\n" in out and "## Steps" in out and "¶" not in out
    assert f"[setup notes]({web.base}/docs/setup.html)" in out  # relative links made absolute
    assert "[FAQ](https://other.example/faq)" in out
    assert "1. Download" in out and "`widget --init`" in out
    assert "```python\nimport widget\nwidget.start(port=8080)\n```" in out
    assert "| Option | Default |" in out and "| port | 8080 |" in out
    for noise in ("tracking", "color:red", "Pricing", "cookies", "Copyright", "invisible", "WidgetCo"):
        assert noise not in out, noise
    assert result.data["title"] == "Widget Guide" and result.summary.startswith("127.0.0.1:")


async def test_prompt_is_echoed_as_what_to_look_for(web: FakeWeb, ctx: ToolContext) -> None:
    url = web.add("/p", "<p>The default port is 8080.</p>")
    result = await fetch(ctx, url, prompt="the default port")
    assert "What to look for: the default port" in result.output.split("\n\n")[0]
    assert "The default port is 8080." in result.output


async def test_long_pages_are_cut_with_a_note(web: FakeWeb, ctx: ToolContext) -> None:
    paragraphs = "".join(f"<p>Paragraph {i} " + "words " * 40 + "</p>" for i in range(100))
    url = web.add("/long", f"<html><body>{paragraphs}</body></html>")
    result = await fetch(ctx, url, max_chars=2000)
    text = result.output.split("\n\n", 1)[1]
    assert len(text) < 2300 and "Paragraph 0" in text and "Paragraph 99" not in text
    assert "[Cut: the page has" in result.output and result.data["truncated"] and "(cut)" in result.summary


async def test_a_prompt_picks_the_sections_about_it_from_a_long_page(web: FakeWeb, ctx: ToolContext) -> None:
    filler = "".join(f"<h2>Topic {i}</h2><p>{'Unrelated words about widgets. ' * 20}</p>" for i in range(40))
    page = (f"<h1>Widget manual</h1><p>Everything about widgets.</p>{filler}"
            "<h2>Timeouts</h2><p>The default timeout is 30 seconds; set WIDGET_TIMEOUT to change it.</p>"
            "<h2>More</h2><p>" + "Closing words. " * 50 + "</p>")
    url = web.add("/manual", page)
    result = await fetch(ctx, url, prompt="the default timeout", max_chars=2000)
    out = result.output
    assert out.split("\n\n")[1] == "# Widget manual"  # the page's opening stays
    assert "## Timeouts\n\nThe default timeout is 30 seconds" in out
    assert "Topic 5" not in out and "[…]" in out
    assert "the 1 of its 43 sections that mention what you look for" in out
    plain = await fetch(ctx, url, max_chars=2000)  # without a prompt: the beginning
    assert "Timeouts" not in plain.output and "give prompt to get the sections" in plain.output


async def test_body_is_read_only_up_to_max_bytes(web: FakeWeb, ctx: ToolContext) -> None:
    url = web.add("/big.txt", "x" * 200_000, content_type="text/plain")
    result = await fetch(ctx, url, max_bytes=10_000)
    assert result.output.split("\n\n")[1] == "x" * 10_000
    assert "Only the first 10,000 bytes" in result.output


async def test_json_and_plain_text_come_back_as_they_are(web: FakeWeb, ctx: ToolContext) -> None:
    payload = json.dumps({"name": "widget", "versions": ["1.0", "1.1"], "html": "<b>not parsed</b>"})
    result = await fetch(ctx, web.add("/api.json", payload, content_type="application/json"))
    assert result.output.endswith("\n\n" + payload)
    text = "line one\n  indented <tag>\n"
    result = await fetch(ctx, web.add("/notes.txt", text, content_type="text/plain; charset=utf-8"))
    assert result.output.endswith("line one\n  indented <tag>")


async def test_charset_from_the_header_is_used(web: FakeWeb, ctx: ToolContext) -> None:
    url = web.add("/fr", "<p>Café crème</p>".encode("latin-1"), content_type="text/html; charset=iso-8859-1")
    assert "Café crème" in (await fetch(ctx, url)).output


async def test_binary_content_is_refused(web: FakeWeb, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="image/png, not text"):
        await fetch(ctx, web.add("/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png"))
    with pytest.raises(ToolError, match="not text"):
        await fetch(ctx, web.add("/blob", b"ELF\x00\x01\x02" * 10, content_type="application/octet-stream"))


async def test_http_errors_say_what_happened(web: FakeWeb, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"answered HTTP 404 Not Found: the page does not exist") as info:
        await fetch(ctx, web.base + "/missing")
    assert "/missing" in str(info.value)
    web.add("/secret", "no", status=403)
    with pytest.raises(ToolError, match=r"HTTP 403.*needs a login"):
        await fetch(ctx, web.base + "/secret")
    web.add("/broken", "oops", status=503)
    with pytest.raises(ToolError, match=r"HTTP 503.*problem on its side"):
        await fetch(ctx, web.base + "/broken")


async def test_connection_refused(ctx: ToolContext) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ToolError, match=f"127.0.0.1 refused the connection on port {port}"):
        await fetch(ctx, f"http://127.0.0.1:{port}/")


def test_dns_and_tls_failures_are_explained() -> None:
    url = httpx.URL("https://no-such-host.invalid/x")
    dns = network_error(httpx.ConnectError("[Errno -2] Name or service not known"), url, 30)
    assert "no-such-host.invalid could not be resolved (DNS)" in str(dns)
    wrapped = httpx.ConnectError("All connection attempts failed")  # what httpx says; the cause says more
    wrapped.__cause__ = socket.gaierror(-3, "Temporary failure in name resolution")
    assert "could not be resolved (DNS)" in str(network_error(wrapped, url, 30))
    tls = network_error(httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"), url, 30)
    assert "TLS certificate is invalid" in str(tls)


async def test_slow_server_times_out(web: FakeWeb, ctx: ToolContext) -> None:
    web.add("/slow", "late")
    web.routes["/slow"].delay = 3
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"timed out after 0.5s"):
        await fetch(ctx, web.base + "/slow", timeout=0.5)
    assert time.monotonic() - started < 2.5


async def test_same_site_redirects_are_followed(web: FakeWeb, ctx: ToolContext) -> None:
    web.add("/old", status=301, Location="/new")
    web.add("/new", "<p>Moved here</p>")
    result = await fetch(ctx, web.base + "/old")
    assert result.output.startswith(f"URL: {web.base}/new") and "Moved here" in result.output


async def test_redirects_to_another_host_are_reported_not_followed(web: FakeWeb, ctx: ToolContext) -> None:
    port = web.base.rsplit(":", 1)[1]
    web.add("/away", status=302, Location=f"http://localhost:{port}/new")
    result = await fetch(ctx, web.base + "/away")
    assert result.ok and f"to another host: http://localhost:{port}/new" in result.output
    assert "call web_fetch again" in result.output
    assert [r["path"] for r in web.requests] == ["/away"]


async def test_redirect_loops_are_capped(web: FakeWeb, ctx: ToolContext) -> None:
    web.add("/loop", status=302, Location="/loop")
    with pytest.raises(ToolError, match="redirected more than 5 times"):
        await fetch(ctx, web.base + "/loop")
    assert len(web.requests) == 6


async def test_bad_urls_are_refused_before_any_request(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="http and https URLs only"):
        await fetch(ctx, "file:///etc/passwd")
    with pytest.raises(ToolError, match=r"no host name|not a valid URL"):
        await fetch(ctx, "https:///path-only")


# -- approval per domain ---------------------------------------------------------------------------------


def allowed(rule: str, url: str, ctx: ToolContext) -> bool:
    """Whether the approval policy, with only ``rule`` allowed, lets web_fetch get ``url`` without asking."""
    policy = ApprovalPolicy(rule_lists={"project": ([rule], [])})
    verdict = policy.evaluate(WebFetch(), WebFetchArgs(url=url), ctx)
    assert verdict.action in ("allow", "ask")
    return verdict.action == "allow"


def test_domain_rules(ctx: ToolContext) -> None:
    tool = WebFetch()
    args = WebFetchArgs(url="https://Docs.Python.org/3/library/json.html")
    assert tool.rule_subject(args) == "domain:docs.python.org"
    assert tool.phase(args) == "Fetching docs.python.org"
    assert (tool.kind, tool.mutates, tool.approval) == ("fetch", False, "rule")
    url = "https://Docs.Python.org/3/library/json.html"
    assert allowed("web_fetch(domain:docs.python.org)", url, ctx)
    assert allowed("web_fetch(domain:*.python.org)", url, ctx)
    assert allowed("web_fetch(*)", url, ctx)
    assert not allowed("web_fetch(domain:a.example)", "https://b.example/", ctx)  # one domain allows no other
    assert not allowed("web_fetch(domain:python.org)", url, ctx)  # a domain rule is that host, not its subdomains
    assert not allowed("web_fetch(domain:docs.python.org)", "https://evil-docs.python.org.example/", ctx)
    assert not allowed("web_fetch(docs.python.org)", url, ctx)  # the domain: prefix is required
    assert not allowed("web_search(*)", url, ctx)  # a rule for another tool
    assert allowed("web_fetch(domain:pypi.org)", "pypi.org/project/httpx/", ctx)  # no scheme
    assert not allowed("web_fetch(domain:pypi.org)", "ftp://pypi.org/", ctx)  # not a URL web_fetch takes
    asked = ApprovalPolicy().evaluate(tool, WebFetchArgs(url="https://b.example/x"), ctx)
    assert asked.action == "ask" and asked.suggested_pattern == "web_fetch(domain:b.example)"
    assert tool.rule_subject({"url": "ftp://pypi.org/"}) == "domain:?"  # not a URL web_fetch takes


# -- web_search and which tools are offered ---------------------------------------------------------------


def names(tools: list[Any]) -> list[str]:
    return [tool.name for tool in tools]


def test_web_search_is_offered_only_with_a_key() -> None:
    assert names(web_tools({}, WebConfig())) == ["web_fetch"]
    assert names(web_tools({"BRAVE_API_KEY": "k"}, WebConfig())) == ["web_fetch", "web_search"]
    assert names(web_tools({"TAVILY_API_KEY": "k"}, WebConfig())) == ["web_fetch", "web_search"]
    assert names(web_tools({}, WebConfig(tavily_api_key="k", fetch=False))) == ["web_search"]
    assert names(web_tools({"BRAVE_API_KEY": " "}, WebConfig())) == ["web_fetch"]
    # a chosen provider without its key: nothing to search with
    assert names(web_tools({"BRAVE_API_KEY": "k"}, WebConfig(search_provider="tavily"))) == ["web_fetch"]
    provider = search_provider({"BRAVE_API_KEY": "b", "TAVILY_API_KEY": "t"}, WebConfig())
    assert provider is not None and provider.name == "brave" and provider.api_key == "b"
    registry = ToolRegistry(web_tools({"BRAVE_API_KEY": "k"}, WebConfig()))
    schema = {s["function"]["name"]: s["function"]["parameters"] for s in registry.schemas()}
    assert set(schema["web_fetch"]["properties"]) == {"url", "prompt"} and schema["web_fetch"]["required"] == ["url"]
    assert schema["web_search"]["required"] == ["query"]


def search_tool(web: FakeWeb, environ: dict[str, str], **config: Any) -> WebSearch:
    tools = web_tools(environ, WebConfig(**config))
    tool = tools[-1]
    assert isinstance(tool, WebSearch)
    return tool


async def test_brave_search_results(web: FakeWeb, ctx: ToolContext) -> None:
    results = [{"title": f"Result <strong>{i}</strong>", "url": f"https://site{i}.example/page",
                "description": "Use <strong>httpx</strong> &amp; friends " + "long " * 100} for i in range(12)]
    web.add("/res/v1/web/search", json.dumps({"web": {"results": results}}), content_type="application/json")
    tool = search_tool(web, {"BRAVE_API_KEY": "brave-key"}, search_base_url=web.base + "/res/v1/web/search",
                       max_results=3)
    result = await tool.run(WebSearchArgs(query="  httpx   streaming "), ctx)
    request = web.requests[-1]
    assert request["method"] == "GET" and request["headers"]["X-Subscription-Token"] == "brave-key"
    assert parse_qs(urlsplit(request["path"]).query) == {"q": ["httpx streaming"], "count": ["3"]}
    lines = result.output.splitlines()
    assert lines[0] == 'Results for "httpx streaming" (Brave Search):'
    assert lines[1:3] == ["1. Result 0", "   https://site0.example/page"]
    assert lines[3].startswith("   Use httpx & friends long") and len(lines[3]) <= 3 + 300
    assert result.output.count("https://site") == 3 and result.summary == "3 results"
    assert tool.approval == "rule" and not tool.mutates


async def test_tavily_search_results(web: FakeWeb, ctx: ToolContext) -> None:
    body = {"results": [{"title": "Tavily hit", "url": "https://t.example/", "content": "Snippet text", "score": 1}]}
    web.add("/search", json.dumps(body), content_type="application/json")
    tool = search_tool(web, {"TAVILY_API_KEY": "tvly-123"}, search_base_url=web.base + "/search")
    result = await tool.run(WebSearchArgs(query="what is tavily"), ctx)
    request = web.requests[-1]
    assert request["method"] == "POST" and request["headers"]["Authorization"] == "Bearer tvly-123"
    assert json.loads(request["body"]) == {"query": "what is tavily", "max_results": 8}
    assert result.output.splitlines()[1:] == ["1. Tavily hit", "   https://t.example/", "   Snippet text"]


async def test_search_errors_and_empty_results(web: FakeWeb, ctx: ToolContext) -> None:
    web.add("/bad-key", '{"error": "unauthorized"}', status=401, content_type="application/json")
    tool = search_tool(web, {"BRAVE_API_KEY": "wrong"}, search_base_url=web.base + "/bad-key")
    with pytest.raises(ToolError, match=r"rejected the API key.*BRAVE_API_KEY"):
        await tool.run(WebSearchArgs(query="x"), ctx)
    web.add("/empty", '{"web": {"results": []}}', content_type="application/json")
    tool = search_tool(web, {"BRAVE_API_KEY": "k"}, search_base_url=web.base + "/empty")
    result = await tool.run(WebSearchArgs(query="zzzz"), ctx)
    assert result.output.startswith('No results for "zzzz"') and result.summary == "no results"
    with pytest.raises(ToolError, match="at most 400"):
        await tool.run(WebSearchArgs(query="word " * 100), ctx)


# -- HTML to text, directly ------------------------------------------------------------------------------


def test_html_details() -> None:
    from anvil.core.tools.web.html_text import body_to_text

    page = b"""<html><head><base href="https://docs.example/v2/"></head><body>
    <div class="sidebar"><a href="/x">Sidebar link</a></div>
    <article><h1>Fences</h1><p>Write <a href="guide/">the guide</a> like this:</p>
    <pre><code class="language-markdown">```python
print("hi")
```</code></pre>
    <p>Done.<img src="a.png" alt="diagram of the flow"><a href="#top">back to top</a></p></article>
    <aside>Related posts</aside></body></html>"""
    title, text = body_to_text(page, "text/html", None, "https://docs.example/v2/fences.html")
    assert title == ""
    assert "[the guide](https://docs.example/v2/guide/)" in text  # relative to <base>
    assert '````markdown\n```python\nprint("hi")\n```\n````' in text  # a longer fence around a fence
    assert "(image: diagram of the flow)" in text and "back to top" in text and "](#top)" not in text
    assert "Sidebar" not in text and "Related posts" not in text
    # an unknown charset name falls back to UTF-8 instead of failing
    assert body_to_text("naïve".encode(), "text/plain", "x-no-such-charset", "u") == ("", "naïve")
