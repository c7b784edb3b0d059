"""What a command is fed, when its targets come from another command: the stage before ``xargs rm`` in a pipeline,
or the substitution in ``kill $(pgrep ...)``.

The checks in :mod:`.command_risk` judge a target they can read. These find targets they can read one step
away: ``find ~ | xargs rm`` deletes what ``find ~`` lists, everything in the home directory; ``echo / | xargs
rm -rf`` deletes ``/``; ``kill -9 $(pgrep -u $USER)`` and ``ps -u $USER -o pid= | xargs kill`` signal every
process the user has. Anything else fed from elsewhere stays "only known at run time".
"""

from __future__ import annotations

import re

from anvil.core.policy.risk_processes import kills_everything
from anvil.core.policy.risk_rows import split_options
from anvil.core.policy.risk_targets import find_parts
from anvil.core.policy.shell_command import SimpleCommand

#: programs that print the paths they are given
_ECHOES = frozenset({"echo", "printf"})
#: programs that only reshape a process list (no filtering by what the processes are)
_RESHAPERS = frozenset({"awk", "gawk", "mawk", "cut", "tail", "head", "sed", "tr", "sort", "uniq", "xargs"})
#: reshapers that filter when given a pattern (``awk '/node/ {print $2}'``, ``sed -n '/x/p'``)
_PATTERNED = frozenset({"awk", "gawk", "mawk", "sed"})
_PATTERN = re.compile(r"/|\$\d+\s*[=!~<>]|\bif\b|match\(")
#: ps options that list every process, or every process of a user
_PS_ALL = re.compile(r"-[eA]\w*|-?a?u?xu?\w*|-[uU]\w*|--user(=.*)?|aux\w*")


def _feeder(cmds: tuple[SimpleCommand, ...], index: int) -> SimpleCommand | None:
    """The one command in the pipeline stage before ``cmds[index]``, if there is exactly one."""
    cmd = cmds[index]
    before = [c for c in cmds if c.pipeline == cmd.pipeline and c.stage == cmd.stage - 1 and c.origin == cmd.origin
              and c.parent == cmd.parent]
    return before[0] if len(before) == 1 and before[0].words else None


def fed_paths(cmds: tuple[SimpleCommand, ...], index: int) -> tuple[list[str], bool, list[str]] | None:
    """What the pipeline feeds ``cmds[index]`` (run through ``xargs``) as paths: (the targets, whether deleting
    them one by one is deleting everything under them, the start paths of a ``find`` a test narrows). ``find X``
    lists X and everything under it, unless a test narrows it to some things below X; ``ls X`` lists what is
    in X (``X/*``); ``echo`` and ``printf`` give their words. None when the input is anything else."""
    feeder = _feeder(cmds, index)
    if feeder is None:
        return None
    if feeder.name == "find":
        starts, narrowed = find_parts(feeder.args)
        if narrowed:
            return [f"{s.rstrip('/')}/{{}}" for s in starts], False, starts
        return starts, True, []
    if feeder.name == "ls":
        return [f"{d.rstrip('/')}/*" for d in split_options(feeder.args)[1] or ["."]], False, []
    if feeder.name in _ECHOES:
        words = split_options(feeder.args)[1]
        return (words[1:] if feeder.name == "printf" and len(words) > 1 else words), False, []
    return None


def selects_every_process(cmds: tuple[SimpleCommand, ...], index: int) -> bool:
    """``kill $(pgrep -u me)``, ``kill $(ps -e -o pid=)``, ``ps -u me -o pid= | xargs kill``: the pids come from a
    listing of every process (of a user), not filtered by what the processes are."""
    cmd = cmds[index]
    if "xargs" in cmd.wrappers:
        feeder = _feeder(cmds, index)
        sources = [c for c in cmds if c.pipeline == cmd.pipeline and c.stage < cmd.stage and c.parent == cmd.parent]
        return feeder is not None and _lists_everything(sources)
    inner = [c for c in cmds if c.parent == index and c.origin == "substitution"]
    by_pipeline: dict[int, list[SimpleCommand]] = {}
    for c in inner:
        by_pipeline.setdefault(c.pipeline, []).append(c)
    return any(_lists_everything(group) for group in by_pipeline.values())


def _lists_everything(pipeline: list[SimpleCommand]) -> bool:
    """A pipeline that lists every process (``pgrep -u X``, ``ps -e``, ``ps aux``) and only reshapes the list."""
    first, rest = pipeline[0], pipeline[1:]
    if first.name == "pgrep":
        everything = kills_everything(("pkill", *first.args), "pkill")
    elif first.name == "ps":
        everything = any(_PS_ALL.fullmatch(a) for a in first.args)
    else:
        return False
    return everything and all(c.name in _RESHAPERS and not (c.name in _PATTERNED and any(
        _PATTERN.search(a) for a in c.args)) for c in rest)
