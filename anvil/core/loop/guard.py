"""Loop guards: notice when the model goes round in circles, and stop the turn to ask the person.

Three rules, counted within one turn (a new message from the person is new information, so it resets them):

- the same call (tool and arguments) failed its last 3 runs, with no success of it in between;
- 3 failures in a row (other tools' successes in between do not count) with the same error signature:
  the tool and its output with numbers, paths' digits and spacing normalised, so "line 12" vs "line 14"
  or a new log file name does not hide a repeat;
- the identical call made 5 times in a row, even if it succeeds (re-reading the same file); a tool that
  polls (``Tool.polls``: command_output) counts only while it brings nothing new.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

SAME_CALL_FAILURES = 3
SAME_ERROR_FAILURES = 3
IDENTICAL_CALLS = 5
_NUMBERS = re.compile(r"\d+(\.\d+)?")
_SPACE = re.compile(r"\s+")


def call_key(name: str, args: dict[str, Any]) -> str:
    return name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def error_signature(name: str, output: str) -> str:
    normalised = _SPACE.sub(" ", _NUMBERS.sub("#", output)).strip().lower()
    return name + ":" + hashlib.sha1(normalised.encode()).hexdigest()


def describe_call(name: str, args: dict[str, Any]) -> str:
    for key in ("path", "command", "pattern"):
        if isinstance(args.get(key), str):
            value = args[key] if len(args[key]) <= 80 else args[key][:77] + "..."
            return f"{name} ({key} {value!r})"
    return name


def first_line(output: str, limit: int = 200) -> str:
    line = next((text.strip() for text in output.splitlines() if text.strip()), "(no output)")
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass
class LoopGuard:
    _failures: dict[str, int] = field(default_factory=dict)  # call key -> failures since its last success
    _signatures: list[str] = field(default_factory=list)  # signatures of the failures in a row
    _last_key: str = ""
    _last_output: str = ""
    _repeats: int = 0

    def reset(self) -> None:
        self._failures.clear()
        self._signatures.clear()
        self._last_key, self._last_output, self._repeats = "", "", 0

    def observe(self, name: str, args: dict[str, Any], ok: bool, output: str, summary: str = "", *,
                polls: bool = False) -> str | None:
        """Record one tool result; returns why the turn should stop (for the person), or None.

        ``summary`` is the result's one-line summary; it names the failure better than the output's first
        line for tools whose output starts with a header (run_tests: "Ran `pytest`..."). ``polls``: the tool
        is meant to be called repeatedly (see ``Tool.polls``).
        """
        key = call_key(name, args)
        # Polling is meant to repeat; it only counts when nothing new came back.
        same = key == self._last_key and (not polls or output == self._last_output)
        self._repeats = self._repeats + 1 if same else 1
        self._last_key, self._last_output = key, output
        what = describe_call(name, args)
        last = summary.strip() if summary.strip() and summary not in {"error", "ok"} else first_line(output)
        ask = "How should I proceed? You can give more detail, fix it yourself, or suggest another approach."
        if ok:
            self._failures.pop(key, None)
            if self._repeats >= IDENTICAL_CALLS:
                return (f"Stopped: the model called {what} {self._repeats} times in a row with the same "
                        f"arguments without moving on. {ask}")
            return None
        self._failures[key] = self._failures.get(key, 0) + 1
        signature = error_signature(name, output)
        if self._signatures and self._signatures[-1] != signature:
            self._signatures.clear()
        self._signatures.append(signature)
        if self._failures[key] >= SAME_CALL_FAILURES:
            return (f"Stopped: {what} failed {self._failures[key]} times with the same arguments. Last error: "
                    f"{last} {ask}")
        if len(self._signatures) >= SAME_ERROR_FAILURES:
            return (f"Stopped: the same error came back {len(self._signatures)} times in a row, last from "
                    f"{what}: {last} {ask}")
        if self._repeats >= IDENTICAL_CALLS:
            return (f"Stopped: the model called {what} {self._repeats} times in a row with the same "
                    f"arguments. Last error: {last} {ask}")
        return None
