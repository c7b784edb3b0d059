"""``anvil``, the command: hand the run to the warm engine when it is on, else run it here.

Imports the standard library only until it knows where the run goes. A run goes to the engine
(:mod:`anvil.engine.server`) only when the person turned it on (``ANVIL_ENGINE=on``), the engine's socket is
this user's and private, and the engine finds this process in its own context (:mod:`anvil.engine.peer`). The
engine forks a child that takes over this process's stdin, stdout and stderr, working directory and
environment; this process relays signals to it and exits with its exit code. Anything else (the engine off,
none running yet, a socket that is not private, an engine that refuses or has gone) runs the command here,
exactly as ``python -m anvil.cli`` would; with the engine on, a missing one is started in the background for
the next run (not under ``CI``, where runs are one-offs). Commands that are quick anyway (``--version``,
``--help``, ``sessions``, ``trust``) and the long-lived ``acp`` always run here.
"""

from __future__ import annotations

import os
import sys

#: commands that never go to the engine: quick on their own, or long-lived with their own protocol
DIRECT_COMMANDS = ("sessions", "trust", "acp")
DIRECT_FLAGS = ("--version", "-V", "-h", "--help")
#: values of ANVIL_ENGINE that turn the engine on (it is off otherwise: see the README's "The warm engine")
ENGINE_ON = ("1", "on", "yes", "true")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["engine"]:
        from anvil.engine.command import engine_command

        return engine_command(args[1:])
    if engine_wanted(args):
        from anvil.engine.handoff import run_in_engine

        code = run_in_engine(args)
        if code is not None:
            return code
    from anvil.cli import main as run_here

    return run_here(args)


def engine_wanted(args: list[str], environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether this run goes through the engine: only when the person turned it on (``ANVIL_ENGINE=on``)."""
    if environ.get("ANVIL_ENGINE", "").strip().lower() not in ENGINE_ON:
        return False
    return not (args[:1] and args[0] in DIRECT_COMMANDS) and not any(a in DIRECT_FLAGS for a in args)


if __name__ == "__main__":
    sys.exit(main())
