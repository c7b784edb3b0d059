"""Start-up work after the first paint, in steps that wait for a pause in typing.

What anvil loads after its first paint (theme validation, settings, the runtime, litellm, what litellm's
first call would import, the tokenizer) runs in threads, but a thread still holds the GIL for long
stretches inside C code: pydantic schema building, module bodies, the price-map JSON, up to ~200 ms at a
time, more in a terminal whose CPU is shared. A key pressed then is echoed late. So the work is cut into
steps and each starts only once the keyboard has been quiet for :data:`IDLE_BEFORE_STEP`: the stalls land
in the pauses between bursts of typing instead of under the keys. A running step is never stopped (a half
import cannot be undone), which is why the steps are small; litellm's own import (~1.8 s) is the largest.

A prompt sent before the end needs every step, so it hurries the rest: from then on they run back to back.
The app holds such a prompt until the steps are done (:attr:`WarmUp.holds_prompts`), so the first model call
finds litellm imported, the modules its first request imports loaded and the tokenizer's encoding ready,
instead of loading them on the event loop (or in a thread, while the answer waits).

The step functions here run in threads: they touch no widget and return what the app shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from anvil.config import Settings
    from anvil.core.context.meter import TokenCounter
    from anvil.core.model.protocol import Model
    from anvil.facade import SessionFacade
    from anvil.runtime import Runtime
    from anvil.trust import ProjectTrust

T = TypeVar("T")

# Longer than the gap between keys of someone typing steadily (~100-250 ms), short enough that a pause to
# think is used for the warm-up.
IDLE_BEFORE_STEP = 0.3

#: a step's name and what it runs (in a thread); a str it returns is a problem to tell the person
ModelStep = tuple[str, Callable[[], object]]


class WarmUp:
    """Runs start-up steps in threads, each after the keyboard has been quiet for ``idle`` seconds."""

    def __init__(self, idle: float = IDLE_BEFORE_STEP, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self._clock = clock
        self._last_key = -math.inf  # nobody has typed yet: the first step need not wait
        self._hurry = asyncio.Event()
        self.started: list[str] = []  # step names, in the order they began (tests and the profile read them)
        self.finished: list[str] = []
        self.done = False
        #: prompts wait for the steps: set while the model's warm-up (or the runtime) is still to come
        self.holds_prompts = True

    def key_pressed(self) -> None:
        self._last_key = self._clock()

    def hurry(self) -> None:
        """Run the remaining steps without waiting for pauses (a prompt is waiting for them)."""
        self._hurry.set()

    def finish(self) -> None:
        self.done = True
        self.holds_prompts = False

    async def until_quiet(self, *, hurried: bool = True) -> None:
        """Return once no key has come for ``idle`` seconds, or at once when hurried (unless ``hurried`` is
        False: a step no prompt needs waits for the pause even then)."""
        while not (hurried and self._hurry.is_set()):
            wait = self._last_key + self.idle - self._clock()
            if wait <= 0:
                return
            if hurried:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._hurry.wait(), wait)
            else:
                await asyncio.sleep(wait)

    async def run(self, name: str, step: Callable[[], T], *, hurried: bool = True) -> T:
        """``step()`` in a thread, started after a pause in typing (or at once once hurried, if ``hurried``)."""
        await self.until_quiet(hurried=hurried)
        self.started.append(name)  # in the same loop turn as the check: no key can slip in between
        result = await asyncio.to_thread(step)
        self.finished.append(name)
        return result


# -- the steps (each runs in a thread) -----------------------------------------------------------------


def load_themes(user_dir: Path) -> tuple[list[Any], list[str]]:
    # Imported here, in the thread: the module validates with pydantic, ~60 ms of imports.
    from anvil.tui.themes import load_themes

    return load_themes(user_dir)


def load_settings(root: Path, flags: dict[str, Any], trust: bool | None) -> Settings:
    from anvil.config import load_settings

    return load_settings(root, flags, trust=trust)


def settings_or_question(root: Path, flags: dict[str, Any], trust: bool | None) -> Settings | ProjectTrust:
    """The settings, or the project's trust check when the person must be asked first."""
    if trust is None:
        from anvil.config import project_trust

        check = project_trust(root)
        if not check.trusted:
            return check
    return load_settings(root, flags, trust)


def open_runtime(settings: Settings, root: Path, *, resume: str | None, continue_latest: bool,
                 model: Model | None, resume_job: tuple[str, str] | None = None) -> Runtime:
    from anvil.runtime import open_runtime

    runtime = open_runtime(settings, root, resume=resume, continue_latest=continue_latest, model=model,
                           resume_job=resume_job)
    # What the first turn would otherwise import on the event loop: the event renderer, the Markdown widget.
    from textual.widgets import Markdown  # noqa: F401

    import anvil.facade
    import anvil.tui.render  # noqa: F401

    return runtime


def uses_litellm(model: object) -> bool:
    # By name: importing anvil.core.model.litellm_model for an isinstance check would load the events module early.
    return type(model).__name__ == "LiteLLMModel"


def model_steps(session: SessionFacade, *, preflight: bool) -> list[ModelStep]:
    """The warm-up a model served by litellm needs before its first call; none for the scripted model.

    ``preflight``: also check the model's name and key (done for a runtime the app built from settings).
    """
    model = session.model
    if not uses_litellm(model):
        return []
    from anvil.core.model.litellm_model import LITELLM_DEPENDENCIES, load_litellm, preload, warm_client, warm_tool_calls

    steps: list[ModelStep] = [(name, partial(preload, name)) for name in LITELLM_DEPENDENCIES]
    steps.append(("litellm", model.preflight if preflight else load_litellm))
    steps.append(("client", partial(warm_client, model.name)))
    steps.append(("tool-calls", warm_tool_calls))
    steps.append(("tokenizer", partial(warm_tokenizer, session.token_counter)))
    return steps


async def start_session(session: SessionFacade, warm_up: WarmUp) -> list[str]:
    """Session hooks and MCP servers; returns the notices. The mcp package (about a second of imports that hold
    the GIL in stretches) is loaded first, in a pause of typing like the other steps."""
    if session.mcp_configured:
        from anvil.core.mcp.transport import import_mcp

        with contextlib.suppress(Exception):  # starting the servers imports it again and reports problems
            await warm_up.run("mcp", import_mcp)
    return await session.start()


async def warm_model(session: SessionFacade) -> None:
    """After /model: the steps the new model's first call needs, in threads, one after another. No waiting
    for pauses in typing: the person asked for the switch and waits for it."""
    for _name, step in model_steps(session, preflight=False):
        try:
            await asyncio.to_thread(step)
        except Exception:  # the first call meets the problem again and says so in its turn
            return


#: The collector's thresholds once start-up is over. A young object is collected after 50,000 allocations
#: instead of 700, so the many short-lived objects of each frame (strips, segments) die young in cheap
#: collections instead of being promoted and walked again and again by full ones.
GC_THRESHOLDS = (50_000, 20, 20)


def settle_heap() -> None:
    """Take what start-up loaded out of the garbage collector's sight, and collect less often.

    A full collection walks every tracked object: with Textual, litellm and the OpenAI SDK loaded that is
    ~320,000 objects and ~95 ms on a quiet machine, several hundred on a busy one, and it came under keys
    and streaming frames (the p95 key latency while streaming). Modules, classes and tables loaded at
    start-up live as long as the process, so they are collected once here and then frozen
    (:func:`gc.freeze`); later collections only walk what the session creates.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def warm_tokenizer(counter: TokenCounter) -> None:
    """Count one short message with the agent's counter, so its encoding is loaded here (~0.1-0.25 s of
    tiktoken) rather than when the first model call measures the context on the event loop."""
    if counter.use_litellm:
        from anvil.core.model.litellm_model import load_litellm

        load_litellm()  # the counter estimates until litellm is imported; it is by now, this makes sure
        counter.count_message({"role": "user", "content": "Hello"})

