"""``[sandbox] network = [hosts]``: commands reach the listed hosts through anvil's proxy and nothing else."""

from __future__ import annotations

import http.server
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import anvil
from anvil.core.sandbox.proxy import host_allowed, parse_target
from tests.core.sandbox.conftest import MakeCtx, linux_only, run

#: the interpreter behind this virtualenv: the commands need only its standard library, and a virtualenv under
#: the temp dir (a checkout in /tmp) is hidden inside the sandbox
PYTHON = os.path.realpath(sys.executable)


def test_the_target_of_a_proxy_request() -> None:
    assert parse_target(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n") == ("pypi.org", 443, True)
    assert parse_target(b"GET http://example.com/a?b HTTP/1.1\r\n\r\n") == ("example.com", 80, False)
    assert parse_target(b"GET https://u:p@example.com:8443/ HTTP/1.1\r\n\r\n") == ("example.com", 8443, False)
    assert parse_target(b"GET http://[::1]:9000/ HTTP/1.1\r\n\r\n") == ("::1", 9000, False)
    assert parse_target(b"GET /relative HTTP/1.1\r\n\r\n") is None
    assert parse_target(b"CONNECT nohost HTTP/1.1\r\n\r\n") is None


def test_host_patterns() -> None:
    hosts = ("pypi.org", "*.pythonhosted.org")
    assert host_allowed("pypi.org", hosts) and host_allowed("PyPI.org.", hosts)
    assert host_allowed("files.pythonhosted.org", hosts)
    assert not host_allowed("pythonhosted.org", hosts) and not host_allowed("pypi.org.evil.com", hosts)
    assert not host_allowed("evilpypi.org", hosts)


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello through the proxy\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


# the test server is on the loopback, which NO_PROXY exempts from the proxy: unset for these requests
FETCH = ("import os, urllib.request as u; [os.environ.pop(k, None) for k in ('NO_PROXY', 'no_proxy')]; "
         "o = u.build_opener(u.ProxyHandler({{'http': os.environ['HTTP_PROXY']}})); "
         "print(o.open('{url}', timeout=10).read().decode())")


@linux_only
async def test_listed_hosts_are_reached_and_others_refused(make_ctx: MakeCtx, web: int) -> None:
    ctx = make_ctx(hosts=("127.0.0.1",))
    allowed = await run(ctx, f'{PYTHON} -c "{FETCH.format(url=f"http://127.0.0.1:{web}/")}"')
    assert allowed.ok and "hello through the proxy" in allowed.output
    refused = await run(ctx, f'{PYTHON} -c "{FETCH.format(url="http://blocked.example/")}"')
    assert not refused.ok
    assert refused.output.startswith("Blocked by the sandbox: connecting to blocked.example, which is not in the "
                                     "allowed hosts.")
    direct = await run(ctx, f"{PYTHON} -c \"import socket; socket.create_connection(('127.0.0.1', {web}), 2)\"")
    assert not direct.ok  # no way around the proxy: the sandbox has no network of its own


@linux_only
async def test_the_proxy_works_with_anvil_itself_under_the_temp_dir(make_ctx: MakeCtx, web: int) -> None:
    """A checkout (and its virtualenv) under /tmp: the sandbox shows its private temp dir there, which would hide
    the forwarder and the Python that runs it. Here the checkout's directory is made a temp dir ($TMPDIR)."""
    checkout = Path(anvil.__file__).resolve().parent.parent
    ctx = make_ctx(hosts=("127.0.0.1",), environ={**os.environ, "TMPDIR": str(checkout)})
    hidden = await run(ctx, f"ls {checkout}")
    assert hidden.ok and "pyproject.toml" not in hidden.output  # the checkout is really behind the temp dir
    allowed = await run(ctx, f'{PYTHON} -c "{FETCH.format(url=f"http://127.0.0.1:{web}/")}"')
    assert allowed.ok and "hello through the proxy" in allowed.output, allowed.output
