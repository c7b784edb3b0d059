"""Saving "always allow" rules to the files anvil owns: ``.anvil/permissions.toml`` and the user one.

anvil writes only these files, never the person's hand-written ``config.toml``, so nothing they wrote there
(comments included) is lost. Which file belongs to which scope is the settings layer's business: the policy
gets the paths. Reading the rules at start-up is the settings layer's too; this module reads a file only to
keep every rule already in it when it adds one.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

import tomli_w

#: Written at the top of every rules file, so a person who opens it knows where it came from.
HEADER = ("# Rules saved by anvil when you chose \"always allow\". Edit freely: anvil keeps every rule here\n"
          "# and rewrites this file when it adds one. Rules in config.toml [permissions] apply too.\n")


class RuleFileError(Exception):
    """A rules file anvil cannot read or write; the message names the file and what to do."""


def _existing_rules(path: Path) -> tuple[list[str], list[str]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RuleFileError(f"Cannot add the rule to {path}: {exc}. Fix the file or move it aside.") from exc
    lists = []
    for key in ("allow", "deny"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RuleFileError(f"{path}: '{key}' should be a list of strings, e.g. [\"git status\", \"pytest*\"].")
        lists.append(list(value))
    return lists[0], lists[1]


def save_rule(path: Path, pattern: str, effect: Literal["allow", "deny"] = "allow") -> None:
    """Add a pattern to an anvil rules file, keeping every rule already there; written atomically."""
    allow, deny = _existing_rules(path)
    target = allow if effect == "allow" else deny
    if pattern in target:
        return
    target.append(pattern)
    text = HEADER + tomli_w.dumps({"allow": allow, "deny": deny})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".toml.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise RuleFileError(f"Cannot save the rule to {path}: {exc}. Check the directory's permissions.") from exc
