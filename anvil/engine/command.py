"""``anvil engine status|stop|start``: what runs in the background, and how to end it."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from anvil.engine import paths, reach, wire

#: how long ``anvil engine start`` waits for the engine to be warm (litellm's import on a busy machine)
START_WAIT = 120.0


def engine_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="anvil engine", description="The warm engine: a background process that has imported anvil and "
        "litellm, and forks a fresh process for each run, so runs start in a fraction of a second. `anvil` uses "
        "it, and starts it when it is not running (not under CI); it exits after 15 minutes unused. "
        "ANVIL_ENGINE=off in the environment turns it off.")
    parser.add_argument("action", choices=["status", "stop", "start"], help="status: is one running (its pid, "
                        "memory, runs served); stop: end it (runs in progress go on); start: start one and wait "
                        "until it is warm")
    args = parser.parse_args(argv)
    path = paths.socket_path()
    if args.action == "start":
        if _ask(path, "status") is None and not reach.start_in_background(wait=START_WAIT):
            print(f"anvil engine: it did not start; its log is {path.parent / 'engine.log'}")
            return 1
        args.action = "status"
    reply = _ask(path, args.action)
    if reply is None:
        print(f"No engine is running (socket {path}).")
        return 0 if args.action == "stop" else 3
    if args.action == "stop":
        print(f"Stopped the engine (pid {reply.get('stopped')}).")
        return 0
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(reply.get("started", 0)))
    print(f"Engine running: pid {reply.get('pid')}, since {started}, {reply.get('served')} run(s) served, "
          f"{reply.get('rss_mb')} MB resident; exits after {reply.get('idle_exit_in')} s more unused.\n"
          f"Socket: {reply.get('socket')}. Stop it with `anvil engine stop`.")
    return 0


def _ask(path: Path, kind: str) -> dict[str, object] | None:
    try:
        paths.check_private(path, want_dir=False)
    except paths.EngineUnsafe:
        return None
    conn = reach.connect(path)
    if conn is None:
        return None
    with conn:
        try:
            wire.send(conn, {"protocol": reach.PROTOCOL, "kind": kind})
            return wire.receive(conn)[0]
        except (OSError, wire.WireError):
            return None
