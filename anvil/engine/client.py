"""``anvil``, the command: hand the run to the warm engine when it is on, else run it here.

Imports the standard library only until it knows where the run goes. A run goes to the engine
(:mod:`anvil.engine.server`) unless the person turned it off (``ANVIL_ENGINE=off``), when the engine's socket
is this user's and private, this process is in the foreground of its terminal, and the engine finds this
process in its own context and able to read the engine's own (:mod:`anvil.engine.peer`). The
engine forks a child that takes over this process's stdin, stdout and stderr, working directory and
environment; this process relays signals to it and exits with its exit code. Anything else (the engine off,
none running yet, a socket that is not private, an engine that refuses or has gone) runs the command here,
exactly as ``python -m anvil.cli`` would; a missing engine is started in the background for the next run (not
under ``CI``, where runs are one-offs). Commands that are quick anyway (``--version``,
``--help``, ``sessions``, ``trust``) and the long-lived ``acp`` always run here.
"""

from __future__ import annotations

import os
import sys

#: commands that never go to the engine: quick on their own, or long-lived with their own protocol
DIRECT_COMMANDS = ("sessions", "trust", "acp")
DIRECT_FLAGS = ("--version", "-V", "-h", "--help")
#: values of ANVIL_ENGINE that turn the engine off (it is on otherwise: see the README's "The warm engine")
ENGINE_OFF = ("0", "off", "no", "false")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["engine"]:
        from anvil.engine.command import engine_command

        try:
            code = engine_command(args[1:])
            sys.stdout.flush()  # a reader that went away (`anvil engine status | head -1`) is found here
            return code
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the rest goes nowhere, quietly
            return 1
    if engine_wanted(args):
        from anvil.engine.handoff import run_in_engine

        code = run_in_engine(args)
        if code is not None:
            return code
    from anvil.cli import main as run_here

    return run_here(args)


def engine_wanted(args: list[str], environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether this run goes through the engine: unless the person turned it off (``ANVIL_ENGINE=off``), on Linux
    (elsewhere there is no ``/proc`` to check a client by, so an engine would refuse every run)."""
    if environ.get("ANVIL_ENGINE", "").strip().lower() in ENGINE_OFF or not sys.platform.startswith("linux"):
        return False
    return not (args[:1] and args[0] in DIRECT_COMMANDS) and not any(a in DIRECT_FLAGS for a in args)


if __name__ == "__main__":
    sys.exit(main())
