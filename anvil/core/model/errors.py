"""Model failures: one sentence for the person, a typed kind, and whether retrying could help.

:func:`classify_error` maps a litellm (or transport) exception to a :class:`ModelError` by the exception's
class name, so litellm need not be imported to classify; :class:`RetryPolicy` spaces the retries.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import Literal, get_args

ModelErrorKind = Literal[
    "error",             # anything not classified below
    "rate_limit", "overloaded", "server", "timeout", "connection",  # passing faults: retried
    "dropped",           # the connection dropped in the middle of a reply: retried while nothing was shown
    "auth", "not_found", "unknown_model", "context_overflow", "content_policy", "bad_request",
    "compaction",        # a summary call of the compactor gave nothing usable
    "setup",             # anvil's own installation is broken (a dependency missing or too old): never retried
]
MODEL_ERROR_KINDS: tuple[ModelErrorKind, ...] = get_args(ModelErrorKind)


class ModelError(Exception):
    """A model failure with one sentence for the person and a retry verdict."""

    def __init__(self, message: str, *, retryable: bool = False, kind: ModelErrorKind = "error") -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.kind: ModelErrorKind = kind


# litellm exception class -> (kind, friendly lead). Retryable ones are passing faults of the provider.
_RETRYABLE: dict[str, tuple[ModelErrorKind, str]] = {
    "RateLimitError": ("rate_limit", "The provider is rate-limiting requests"),
    "ServiceUnavailableError": ("overloaded", "The provider is overloaded"),
    "InternalServerError": ("server", "The provider had a server error"),
    "BadGatewayError": ("server", "The provider had a gateway error"),
    "Timeout": ("timeout", "The request to the provider timed out"),
    "APIConnectionError": ("connection", "Could not connect to the provider"),
}
_FATAL: dict[str, tuple[ModelErrorKind, str]] = {
    "AuthenticationError": ("auth", "The provider rejected the API key"),
    "PermissionDeniedError": ("auth", "The provider refused access to this model"),
    "NotFoundError": ("not_found", "The provider does not know this model"),
    "ContextWindowExceededError": ("context_overflow", "The conversation is longer than the model's context"),
    "ContentPolicyViolationError": ("content_policy", "The provider refused the request (content policy)"),
    "BadRequestError": ("bad_request", "The provider rejected the request"),
    "UnprocessableEntityError": ("bad_request", "The provider rejected the request"),
}
# litellm prefixes messages with class names: "litellm.RateLimitError: RateLimitError: OpenAIException - ..."
_LITELLM_PREFIX = re.compile(r"^(litellm\.\w+:\s*)?(\w+Error:\s*)?(\w+Exception\s*-\s*)?")


def classify_error(exc: BaseException, model: str, api_base: str | None = None) -> ModelError:
    """Map a litellm (or transport) exception to a :class:`ModelError`."""
    text = str(exc).replace("\n", " ").strip()
    detail = _LITELLM_PREFIX.sub("", text)[:300] or type(exc).__name__
    missing = _missing_module(exc)
    if missing is not None:  # litellm wraps this as a connection error; retrying cannot install a package
        return ModelError(f"anvil's installation is incomplete: {missing}. Reinstall anvil with its dependencies "
                          "(`pip install --upgrade anvil`, or `pip install -e .` in its checkout).", kind="setup")
    if _is_dropped(exc, text):  # before the connection check: litellm calls this a connection error too
        where = f" at {api_base}" if api_base else ""
        return ModelError(f"The connection to the provider{where} dropped in the middle of its reply",
                          retryable=True, kind="dropped")
    if _is_connection_failure(exc, text):
        where = f" at {api_base}" if api_base else ""
        return ModelError(f"Could not connect to the provider{where}: {detail}. Check that the server is "
                          "running and the address is right.", retryable=True, kind="connection")
    if "LLM Provider NOT provided" in text:
        return ModelError(
            f"anvil doesn't know which provider serves '{model}'. Use a litellm model string such as "
            "'anthropic/claude-sonnet-4-5' or 'openai/gpt-4o', or 'openai/<name>' with --api-base for a "
            "local OpenAI-compatible server.", kind="unknown_model")
    known = _by_class(exc, model, api_base, detail)
    if known is not None:
        return known
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return ModelError(f"The provider answered {status}: {detail}", retryable=True, kind="server")
    if isinstance(exc, (ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return ModelError(f"Could not reach the provider: {detail}", retryable=True, kind="connection")
    return ModelError(f"The model call failed ({type(exc).__name__}): {detail}", kind="error")


def _by_class(exc: BaseException, model: str, api_base: str | None, detail: str) -> ModelError | None:
    # Walk the class hierarchy so subclasses (ContextWindowExceededError < BadRequestError) map first.
    for cls in type(exc).__mro__:
        name = cls.__name__
        if name in _FATAL:
            kind, lead = _FATAL[name]
            return ModelError(f"{lead} ({model}): {detail}{_hint(kind, model)}", kind=kind)
        if name in _RETRYABLE:
            kind, lead = _RETRYABLE[name]
            where = f" at {api_base}" if api_base and kind == "connection" else ""
            return ModelError(f"{lead}{where}: {detail}", retryable=True, kind=kind)
    return None


def _missing_module(exc: BaseException) -> str | None:
    """What could not be imported, when an ImportError is behind the failure (through litellm's wrapping)."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return None
        if isinstance(seen, ImportError):
            return str(seen) or f"the module {seen.name} cannot be imported"
        seen = seen.__cause__ or seen.__context__
    return None


# How the HTTP stacks litellm uses say that a response's body stopped before its end (a network, a proxy or the
# provider dropped the connection): httpx, aiohttp, and the standard library underneath them.
_BODY_CUT = frozenset({"ReadError", "RemoteProtocolError", "ClientPayloadError", "TransferEncodingError",
                       "ContentLengthError", "ServerDisconnectedError", "ClientConnectionResetError",
                       "ConnectionResetError", "IncompleteRead"})
_BODY_CUT_TEXT = ("Response payload is not completed", "peer closed connection without sending complete message",
                  "incomplete chunked read", "Server disconnected")


def _is_dropped(exc: BaseException, text: str) -> bool:
    """A dropped connection is behind ``exc`` (litellm wraps it as a connection error, or as "overloaded" for
    Anthropic)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if type(seen).__name__ in _BODY_CUT:
            return True
        seen = seen.__cause__ or seen.__context__
    return any(phrase in text for phrase in _BODY_CUT_TEXT)


def _is_connection_failure(exc: BaseException, text: str) -> bool:
    # litellm wraps a refused connection as InternalServerError("Connection error."); look at the causes too.
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if type(seen).__name__ in {"APIConnectionError", "ConnectError", "ConnectionRefusedError"}:
            return True
        seen = seen.__cause__ or seen.__context__
    return "Connection error" in text


def _hint(kind: ModelErrorKind, model: str) -> str:
    if kind == "auth":
        provider = model.split("/", 1)[0].upper() if "/" in model else "the provider's"
        return f". Set {provider}_API_KEY (or ANVIL_API_KEY) to a valid key."
    if kind == "not_found":
        return ". Check the model name with --model."
    return ""


@dataclass
class RetryPolicy:
    """Bounded exponential backoff with full jitter."""

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)
