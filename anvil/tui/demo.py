"""`anvil --demo`: the real app on a copy of the demo project, driven by a scripted model.

No key and no network: the bundled script (anvil/core/model/scripts/tui_demo.json) streams text, keeps a todo
list, asks to run the tests (the approval modal), edits wordstat.py (a diff) and, once the turn is over,
the app compacts the conversation. The person only presses ``y`` when asked.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from anvil.core.context.meter import REPLY_RESERVE_FRACTION
from anvil.core.model.scripted import ScriptedModel

if TYPE_CHECKING:
    from anvil.tui.commands import CommandRunner
    from anvil.tui.prompt_input import PromptInput

DEMO_PROMPT = "The case-insensitivity test in wordstat fails. Find out why and fix it."
#: Seconds between streamed chunks: slow enough to watch, fast enough not to bore.
CHUNK_DELAY = 0.02
#: The demo's context window is sized so the gauge rises to about this share of the usable window: high
#: enough to watch, and well below the automatic compaction threshold (0.85), which would take a scripted turn
#: as its summary. The margin absorbs what differs between machines: the person's own AGENTS.md in the system
#: prompt, MCP tools from their config, the test command's output. (The /compact at the end summarises older
#: messages whatever the window: a compaction asked for keeps at most half of the conversation verbatim.)
DEMO_PEAK_SHARE = 0.65
#: What the script adds to the tool schemas at its peak: system prompt and the conversation, in tokens as the
#: scripted model counts them. Measured: about 3,170 with pytest installed, 3,000 without (a shorter error).
DEMO_HISTORY_TOKENS = 3200


class DemoError(Exception):
    pass


def demo_project_source() -> Path:
    """The demo project: shipped inside the package when installed, else the repository's examples/."""
    candidates = [Path(str(resources.files("anvil"))) / "examples" / "demo-project",
                  Path(__file__).resolve().parents[2] / "examples" / "demo-project"]
    for path in candidates:
        if (path / "wordstat.py").is_file():
            return path
    raise DemoError("The demo project (examples/demo-project) is not in this installation.")


DEMO_DIR_PREFIX = "anvil-demo-"


def prepare_demo_project() -> Path:
    """A fresh copy in a temporary directory, so the demo never touches anything of the person's."""
    target = Path(tempfile.mkdtemp(prefix=DEMO_DIR_PREFIX)) / "demo-project"
    shutil.copytree(demo_project_source(), target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def remove_demo_project(root: Path) -> None:
    """Remove the temporary directory :func:`prepare_demo_project` made (and the demo's data in it), on exit."""
    base = root.parent
    if base.name.startswith(DEMO_DIR_PREFIX) and root.name == "demo-project":
        shutil.rmtree(base, ignore_errors=True)


def demo_model() -> ScriptedModel:
    text = resources.files("anvil.core.model").joinpath("scripts/tui_demo.json").read_text(encoding="utf-8")
    return ScriptedModel(json.loads(text), name="scripted", delay=CHUNK_DELAY, window=demo_window())


def demo_window() -> int:
    """A window that fits the registered tools: their schemas are sent on every call and weigh the most."""
    from anvil.core.tools import default_tools

    schema_tokens = len(json.dumps(default_tools().schemas())) // 4  # as ScriptedModel reports its usage
    peak = schema_tokens + DEMO_HISTORY_TOKENS
    usable = peak / DEMO_PEAK_SHARE
    return max(4096, int(usable / (1 - REPLY_RESERVE_FRACTION)))  # a window this small keeps 10% for the reply


def demo_environment(root: Path | None = None) -> None:
    """`python` in the script must be this interpreter (some systems only have python3 on PATH). With the demo
    project's ``root``, the demo's sessions and logs go beside it in the temporary directory, so nothing of the
    demo stays in the person's data directory once it is removed."""
    bindir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    if root is not None:
        os.environ["XDG_DATA_HOME"] = str(root.parent / "data")


class DemoHost(Protocol):
    """What playing the demo needs of the app: its prompt, sending, commands and the transcript."""

    root: Path
    busy: bool
    commands: CommandRunner

    @property
    def prompt(self) -> PromptInput: ...

    def send(self, typed: str) -> None: ...

    def add_user(self, text: str) -> Any: ...

    def add_line(self, kind: str, text: str) -> Any: ...


async def play(app: DemoHost, prompt: str) -> None:
    """Type the demo's prompt where the person can see it, send it, then compact the conversation."""
    await asyncio.sleep(0.6)
    for char in prompt:
        app.prompt.insert(char)
        await asyncio.sleep(0.015)
    await asyncio.sleep(0.4)
    app.prompt.load_text("")
    app.send(prompt)
    await _until_idle(app)
    await asyncio.sleep(1.0)
    app.add_user("/compact")
    await app.commands.run("/compact")
    await _until_idle(app)
    app.add_line("notice", f"That was the demo: the files are in a temporary copy, {app.root}, removed when you quit. "
                           "Keep typing to explore the app; /exit or Ctrl+C twice quits.")


async def _until_idle(app: DemoHost) -> None:
    await asyncio.sleep(0.2)
    while app.busy:
        await asyncio.sleep(0.1)
