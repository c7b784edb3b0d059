"""The way out for a sandbox without network: an HTTP proxy in anvil that lets through only a list of hosts.

``[sandbox] network = ["pypi.org", "*.pythonhosted.org"]`` keeps the command in its own network namespace,
with no route out. anvil listens on a unix socket that the sandbox can see (read-only, connecting still
works); inside, :mod:`forwarder` listens on ``127.0.0.1:3128`` and passes connections to that socket, and
``HTTP_PROXY``/``HTTPS_PROXY`` point there. The proxy reads the first request (``CONNECT host:port`` for
HTTPS, an absolute URL for plain HTTP), refuses hosts that are not on the list (403, and the refusal is
remembered so the command's result can say what was blocked), and otherwise connects and relays bytes.

What this enforces: nothing leaves the sandbox except TCP connections, made by anvil, to the listed hosts.
What it cannot do: programs that ignore the proxy variables get no network at all (not a way around the
list); the host is what the client asked for, so HTTPS traffic itself is not inspected.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import time
from pathlib import Path

#: Where the forwarder inside the sandbox listens.
PROXY_PORT = 3128
_HEAD_LIMIT = 64 * 1024


def host_allowed(host: str, patterns: tuple[str, ...]) -> bool:
    """``pypi.org`` allows exactly that host; ``*.pythonhosted.org`` its subdomains."""
    host = host.strip().strip("[]").rstrip(".").lower()
    return any(fnmatch.fnmatchcase(host, p.strip().lower()) for p in patterns if p.strip())


def parse_target(head: bytes) -> tuple[str, int, bool] | None:
    """(host, port, is CONNECT) from a proxy request's first line; None when it is not one."""
    try:
        method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    except ValueError:
        return None
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        return (host, int(port), True) if port.isdigit() and host else None
    if "://" not in target:
        return None
    scheme, rest = target.split("://", 1)
    authority = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    default = "443" if scheme.lower() == "https" else "80"
    if authority.startswith("["):  # an IPv6 address
        host, _, port = authority[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = authority.partition(":")
    port = port or default
    return (host, int(port), False) if port.isdigit() and host else None


class HostProxy:
    """One proxy for a session's commands."""

    def __init__(self, hosts: tuple[str, ...]) -> None:
        self.hosts = hosts
        #: (when, host) of every refused connection, so a command's result can name them
        self.refused: list[tuple[float, str]] = []
        self._server: asyncio.AbstractServer | None = None

    async def start_unix(self, path: Path) -> None:
        if self._server is None:
            self._server = await asyncio.start_unix_server(self._serve, path=str(path))

    async def start_tcp(self) -> int:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, host="127.0.0.1", port=0)
        return int(self._server.sockets[0].getsockname()[1])

    def refused_since(self, since: float) -> list[str]:
        return [host for when, host in self.refused if when >= since]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        target = parse_target(head[:_HEAD_LIMIT])
        if target is None or not host_allowed(target[0], self.hosts):
            host = target[0] if target else "(not a proxy request)"
            self.refused.append((time.monotonic(), host))
            body = f"anvil's sandbox allows only these hosts: {', '.join(self.hosts)}\n".encode()
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return
        host, port, tunnel = target
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (OSError, TimeoutError) as exc:
            writer.write(f"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n{exc}\n".encode())
            writer.close()
            return
        if tunnel:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_writer.write(head)  # the server sees the request as the client wrote it (absolute-form)
        await asyncio.gather(_relay(reader, up_writer), _relay(up_reader, writer))


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
