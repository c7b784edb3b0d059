"""The model protocol on litellm: any litellm model string, always streaming, retried within bounds.

litellm takes seconds to import, so it is imported lazily (:func:`load_litellm`) and can be warmed
piece by piece (:data:`LITELLM_DEPENDENCIES` with :func:`preload`, then :func:`load_litellm`,
:func:`warm_client` and :func:`warm_tool_calls`) by a front end that pauses between the pieces.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import threading
import warnings
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from anvil.core.events import ReasoningDelta, Retrying
from anvil.core.model.caching import with_breakpoints
from anvil.core.model.chunks import StreamAssembler
from anvil.core.model.errors import ModelError, RetryPolicy, classify_error
from anvil.core.model.lean_stream import lean_events
from anvil.core.model.protocol import Completion, Reasoning, StreamItem
from anvil.core.model.providers import Traits, outgoing, reasoning_params, thinking_possible, traits_for

# ---------------------------------------------------------------------------------------------
# litellm, loaded lazily

_litellm: Any = None
_litellm_lock = threading.Lock()


def load_litellm() -> Any:
    """Import litellm once, configured for offline, quiet use."""
    global _litellm
    if _litellm is None:
        with _litellm_lock:
            if _litellm is None:
                # Without this litellm fetches a price map over the network at import, retrying with sleeps.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                # In its default DEV mode litellm loads a .env file found above its own install, which for
                # a venv inside the person's repository is the project's .env: their app's secrets would
                # become anvil's environment (and its commands'). anvil reads keys from the real environment.
                os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
                import litellm

                litellm.suppress_debug_info = True  # it prints provider-list noise otherwise
                # Its Responses API bridge serialises usage through a model that does not fit it, and pydantic
                # warns on stderr at every call (over the TUI): litellm's internals, nothing anyone can act on.
                warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
                litellm.drop_params = True  # providers that lack stream_options etc. still work
                _litellm = litellm
    return _litellm


# litellm's heaviest dependencies (about 0.4 s, 0.1 s and 0.07 s of its ~1.8 s import), in the order it
# imports them. Importing them one at a time first cuts the import into pieces a front end can pause
# between; litellm's own package body stays one piece.
LITELLM_DEPENDENCIES = ("openai", "aiohttp", "jinja2")

# What litellm imports inside its first completion call whenever tools are passed (anvil always passes
# them): its MCP tool handling, ~250 modules, ~0.5 s in the request's worker thread while the first answer
# waits. These are litellm internals (1.106): should they move, preloading them does nothing and the first
# call pays again, as it did before.
_TOOL_CALL_MODULES = ("litellm.responses.mcp.chat_completions_handler",
                      "litellm.responses.mcp.litellm_proxy_mcp_handler")


def preload(*modules: str) -> None:
    """Import ``modules`` now. A failure is left for the real import to raise, where it is reported."""
    for module in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def warm_client(model: str) -> None:
    """Import what litellm's first request for ``model`` would import on the caller's event loop.

    For OpenAI and OpenAI-compatible providers litellm goes through the OpenAI SDK, whose client imports
    all its resource modules (~0.3 s) the first time a request touches ``client.chat``: inside the first
    model call, on the front end's event loop. Other providers do not use the SDK, so nothing is imported.
    """
    litellm = load_litellm()
    try:
        provider = litellm.get_llm_provider(model)[1]
    except Exception:
        return  # an unknown provider: preflight has said so, and the call will too
    if provider in ("openai", "azure") or provider in getattr(litellm, "openai_compatible_providers", ()):
        preload("openai.resources")


def warm_tool_calls() -> None:
    """Import what litellm's first request with tools imports (see ``_TOOL_CALL_MODULES``), ahead of it."""
    load_litellm()  # first: litellm must be configured (offline price map) by its first import
    preload(*_TOOL_CALL_MODULES)


# Model calls still being prepared or opened, and the closing of streams nobody waits for any more (the event loop
# keeps only weak references to tasks; this keeps them, and lets the session wait for them before the loop ends).
_IN_FLIGHT: set[asyncio.Future[Any]] = set()


async def _open_stream(litellm: Any, request: dict[str, Any]) -> Any:
    """``litellm.acompletion(**request)``, which a cancel cannot leave half done.

    litellm builds the request in a worker thread, and that thread returns the coroutine that makes the HTTP call.
    A cancel (an interrupt, the app closing) that lands while the thread runs used to drop that coroutine unawaited,
    and Python printed "coroutine 'OpenAIChatCompletion.async_streaming' was never awaited" when it was collected,
    over the person's terminal. So the call runs in a task of its own, shielded: a cancel stops the waiting at
    once, the call finishes on its own, and the stream it opened is closed then."""
    call = _in_flight(litellm.acompletion(**request))
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        call.add_done_callback(_close_abandoned)
        raise


def _in_flight(work: Any) -> asyncio.Future[Any]:
    task = asyncio.ensure_future(work)
    _IN_FLIGHT.add(task)
    task.add_done_callback(_IN_FLIGHT.discard)
    return task


def _close_abandoned(call: asyncio.Future[Any]) -> None:
    if call.cancelled() or call.exception() is not None:  # the exception is taken: nobody needs it now
        return
    _in_flight(_close_stream(call.result()))


async def settle_model_calls(timeout: float = 1.0) -> None:
    """Before the event loop ends: let model calls finish preparing (up to ``timeout``), then cancel what is left.
    Ending the loop cancels every task, and a call cancelled while litellm's worker thread still prepares its request
    drops the coroutine that thread returns unawaited (the warning above). Calls that are streaming are not waited
    for: their preparation is over."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while pending := [task for task in _IN_FLIGHT if not task.done()]:  # an abandoned call leaves its closing
        left = deadline - loop.time()
        if left <= 0:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=0.5)
            return
        await asyncio.wait(pending, timeout=left)


async def _close_stream(response: Any) -> None:
    """Close a litellm stream (its HTTP response); a stream that cannot be closed is left to the collector."""
    close = getattr(response, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


async def _one_by_one(response: Any) -> AsyncGenerator[tuple[Any], None]:
    """litellm's stream in the lean stream's shape (chunks in batches): one chunk a batch."""
    async for chunk in response:
        yield (chunk,)


_OPENAI_COMPATIBLE = ("openai/", "hosted_vllm/", "lm_studio/", "ollama/", "ollama_chat/", "llamafile/")


class LiteLLMModel:
    """Any litellm model string, always streaming, with usage and cost from the responses.

    ``reasoning`` is the effort (and thinking budget) asked of models that reason; ``max_output_tokens`` the
    output limit sent with every call (None: the provider's default, or the model's maximum when thinking
    needs one stated); ``retry_output_tokens`` the limit for the one retry of a reply cut off in a tool call
    (None: twice the limit that cut it, within the model's maximum). ``prompt_caching`` marks cache breakpoints
    for providers that need them (on by default; off only to measure what caching saves)."""

    def __init__(self, name: str, *, api_base: str | None = None, api_key: str | None = None,
                 retry: RetryPolicy | None = None, timeout: float = 600.0,
                 context_window_override: int | None = None, reasoning: Reasoning | None = None,
                 max_output_tokens: int | None = None, retry_output_tokens: int | None = None,
                 prompt_caching: bool = True) -> None:
        self.name = name
        self.api_base = api_base
        self.api_key = api_key or os.environ.get("ANVIL_API_KEY") or self._placeholder_key()
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.reasoning = reasoning or Reasoning()
        self.max_output_tokens = max_output_tokens
        self.retry_output_tokens = retry_output_tokens
        self.prompt_caching = prompt_caching
        self._context_window = context_window_override
        self._info: dict[str, Any] | None = None
        self._traits: Traits | None = None
        self._images: bool | None = None

    def _placeholder_key(self) -> str | None:
        # Local servers (llama.cpp, vLLM, Ollama) need no key, but the OpenAI client insists on one.
        if self.api_base and self.name.startswith(_OPENAI_COMPATIBLE) and not os.environ.get("OPENAI_API_KEY"):
            return "anvil-no-key"
        return None

    def preflight(self) -> str | None:
        """A problem that would make every call fail (unknown provider, missing key), said up front."""
        litellm = load_litellm()
        try:
            litellm.get_llm_provider(self.name)
        except Exception as exc:
            return classify_error(exc, self.name, self.api_base).message
        if self.api_key:
            return None
        missing = [k for k in litellm.validate_environment(model=self.name).get("missing_keys", [])
                   if not k.endswith("_API_BASE")]  # a base URL has a default; a key does not
        if missing:
            names = " or ".join(missing)
            return (f"No API key for {self.name}: set {names} (or ANVIL_API_KEY) in the environment anvil starts "
                    "in, or choose another model (--model, /model); `anvil --demo` works without a key.")
        return None

    def _model_info(self) -> dict[str, Any]:
        """litellm's facts about the model (window, output limit, reasoning); empty when it does not know it."""
        if self._info is None:
            try:
                self._info = dict(load_litellm().get_model_info(self.name))
            except Exception:
                self._info = {}
        return self._info

    def context_window(self) -> int | None:
        if self._context_window is None:
            info = self._model_info()
            self._context_window = int(info.get("max_input_tokens") or info.get("max_tokens") or 0) or None
        return self._context_window

    def accepts_images(self) -> bool:
        """What litellm knows of the model (``supports_vision``); an unknown model is taken not to."""
        if self._images is None:
            try:
                self._images = bool(load_litellm().supports_vision(model=self.name))
            except Exception:
                self._images = False
        return self._images

    def reasons(self) -> bool | None:
        info = self._model_info()  # a model litellm knows but does not mark as reasoning does not reason
        return bool(info.get("supports_reasoning")) if info else None

    def traits(self) -> Traits:
        if self._traits is None:
            try:
                provider = str(load_litellm().get_llm_provider(self.name)[1])
            except Exception:
                provider = self.name.split("/", 1)[0]
            self._traits = traits_for(self.name, provider)
        return self._traits

    def larger_output_limit(self, cut: Completion) -> int | None:
        model_max = int(self._model_info().get("max_output_tokens") or 0) or None
        in_force = self.max_output_tokens or (cut.usage.completion_tokens if cut.usage else None) or model_max
        wanted = self.retry_output_tokens or (2 * in_force if in_force else None)
        if wanted is None:
            return None
        limit = min(wanted, model_max) if model_max else wanted
        return limit if in_force is None or limit > in_force else None

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 max_output_tokens: int | None = None) -> dict[str, Any]:
        traits = self.traits()
        thinking = self.reasoning.on and (not traits.signed_thinking or thinking_possible(messages))
        messages = outgoing(messages, traits, thinking=thinking)
        if traits.explicit_cache and self.prompt_caching:
            messages, tools = with_breakpoints(messages, tools)
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self.timeout,
            "num_retries": 0,  # retries are ours: bounded, visible as events
            "max_retries": 0,
        }
        if thinking:
            kwargs.update(reasoning_params(self.reasoning, traits))
        limit = self._output_limit(max_output_tokens, thinking and traits.signed_thinking)
        if limit:
            kwargs["max_tokens"] = limit
        if tools:
            kwargs["tools"] = tools
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        return kwargs

    def _output_limit(self, override: int | None, signed_thinking: bool) -> int | None:
        """The output limit to send. Anthropic counts thinking in it: without a stated limit litellm would allow
        only the budget plus 4,096 tokens, so with thinking on the model's maximum is stated; a configured limit
        at or under the thinking budget gets the budget on top (the API wants the limit above the budget)."""
        limit = override or self.max_output_tokens
        if not signed_thinking:
            return limit
        if limit is None:
            return int(self._model_info().get("max_output_tokens") or 0) or None
        budget = self.reasoning.budget or 0
        return limit + budget if limit <= budget else limit

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                     max_output_tokens: int | None = None) -> AsyncIterator[StreamItem]:
        litellm = await asyncio.to_thread(load_litellm)
        request = await asyncio.to_thread(self._request, messages, tools, max_output_tokens)
        attempt = 1
        while True:
            started_output = False
            try:
                response = await _open_stream(litellm, request)
                assembler = StreamAssembler()
                lean = lean_events(response)
                add = assembler.add if lean is None else assembler.add_dict
                batches = lean or _one_by_one(response)
                try:
                    async for batch in batches:
                        for chunk in batch:
                            delta_text = add(chunk)
                            reasoning = assembler.take_reasoning()
                            if reasoning:
                                started_output = True
                                yield ReasoningDelta(reasoning)
                            if delta_text:
                                started_output = True
                                yield delta_text
                finally:
                    await batches.aclose()  # the lean stream closes the HTTP response it reads
                    await _close_stream(response)  # an interrupted stream too: its connection goes now
                completion = assembler.build()
                completion.cost = self._cost(litellm, assembler.raw_usage)
                yield completion
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = self._no_key() or classify_error(exc, self.name, self.api_base)
                allowed = self.retry.max_attempts if error.max_retries is None else min(
                    self.retry.max_attempts, error.max_retries + 1)
                # Text already shown cannot be taken back, so a mid-stream failure is not retried.
                if not error.retryable or started_output or attempt >= allowed:
                    if error.retryable and attempt > 1:
                        error.message = f"{error.message.rstrip('.')} (gave up after {attempt} attempts)."
                    raise error from exc
                delay = error.retry_delay if error.retry_delay is not None else self.retry.delay(attempt)
                yield Retrying(attempt, allowed, round(delay, 2), error.message)
                await asyncio.sleep(delay)
                attempt += 1

    def _no_key(self) -> ModelError | None:
        """The call failed and no key was set for the model: that is the problem to name, whatever the provider
        answered (litellm reports it as a rejected key)."""
        if self.api_key:
            return None
        try:
            problem = self.preflight()
        except Exception:
            return None
        return ModelError(problem, kind="auth") if problem and problem.startswith("No API key") else None

    def _cost(self, litellm: Any, usage: Any) -> float | None:
        """The call's cost at litellm's prices for each kind of token (input, cache reads, cache writes, output,
        reasoning), from litellm's own usage object; None when the price is unknown (local models)."""
        if usage is None:
            return None
        if isinstance(usage, dict):  # read lean: the provider's JSON, as litellm's own usage object
            try:
                usage = litellm.Usage(**usage)
            except Exception:
                return None
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(model=self.name, usage_object=usage)
            return float(prompt_cost + completion_cost)
        except Exception:
            return None  # unknown price: no cost rather than a guess
