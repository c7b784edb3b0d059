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
    """A model failure with one sentence for the person and a retry verdict.

    ``max_retries`` caps the retries of a retryable failure below the policy's (a name that does not resolve
    and a refused connection are retried once: a longer wait rarely fixes either), ``retry_delay`` replaces
    the backoff (seconds) for those retries."""

    def __init__(self, message: str, *, retryable: bool = False, kind: ModelErrorKind = "error",
                 max_retries: int | None = None, retry_delay: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.kind: ModelErrorKind = kind
        self.max_retries = max_retries
        self.retry_delay = retry_delay


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
# A connection that cannot be made at all, found in the exception's causes (by class name) or its text:
# (kind, what happened, what to do, retries allowed, delay before the retry). Retrying such a failure at the
# policy's pace only makes the person wait (a name that does not resolve stays so for seconds at least).
_UNREACHABLE: dict[str, tuple[ModelErrorKind, str, str, int, float]] = {
    "dns": ("connection", "Could not reach {host}: the name does not resolve",
            "check your network connection and the address", 1, 0.5),
    "refused": ("connection", "Could not connect to {host}: the connection was refused",
                "check that the server is running and the address is right", 1, 0.5),
}
_UNREACHABLE_SIGNS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "dns": (frozenset({"gaierror", "ClientConnectorDNSError"}),
            ("Name or service not known", "nodename nor servname", "Temporary failure in name resolution",
             "getaddrinfo failed", "No address associated with hostname")),
    "refused": (frozenset({"ConnectionRefusedError"}), ("Connection refused", "Connect call failed")),
}
# litellm prefixes messages with class names: "litellm.RateLimitError: RateLimitError: OpenAIException - ..."
_LITELLM_PREFIX = re.compile(r"^(litellm\.\w+:\s*)?(\w+Error:\s*)?(\w+Exception\s*-\s*)?")
# What a provider's text must not carry into anvil's sentence: object reprs, litellm's advice to programmers.
_NOISE = (re.compile(r"\s*ssl:<[^>]*>"), re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>"),
          re.compile(r"\s*Handle with `?litellm\.\w+`?\.?"), re.compile(r"\blitellm\.\w+(Error|Exception):\s*"),
          re.compile(r"\b\w+Exception\s+-\s+"))
_HOST = re.compile(r"Cannot connect to host ([^\s:]+)")
_DETAIL_CHARS = 200


def classify_error(exc: BaseException, model: str, api_base: str | None = None) -> ModelError:
    """Map a litellm (or transport) exception to a :class:`ModelError` whose message is one sentence in anvil's
    words: no object reprs, no litellm class names, one full stop."""
    text = str(exc).replace("\n", " ").strip()
    detail = clean_detail(text) or type(exc).__name__
    missing = _missing_module(exc)
    if missing is not None:  # litellm wraps this as a connection error; retrying cannot install a package
        return ModelError(f"anvil's installation is incomplete ({missing}): reinstall anvil with its dependencies "
                          "(`pip install --upgrade anvil`, or `pip install -e .` in its checkout).", kind="setup")
    if _is_dropped(exc, text):  # before the connection check: litellm calls this a connection error too
        where = f" at {api_base}" if api_base else ""
        return ModelError(f"The connection to the provider{where} dropped in the middle of its reply",
                          retryable=True, kind="dropped")
    unreachable = _unreachable(exc, text, api_base)
    if unreachable is not None:
        return unreachable
    if _is_connection_failure(exc, text):
        where = f" at {api_base}" if api_base else ""
        return ModelError(sentence(f"Could not connect to the provider{where} ({detail})",
                                   "check your network, and that the server is running and the address is right"),
                          retryable=True, kind="connection")
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
        return ModelError(sentence(f"The provider answered {status} ({detail})", "anvil retries it"),
                          retryable=True, kind="server")
    if isinstance(exc, (ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return ModelError(sentence(f"Could not reach the provider ({detail})", "check your network connection"),
                          retryable=True, kind="connection")
    return ModelError(sentence(f"The model call failed ({detail})", "see errors.log if it keeps happening"),
                      kind="error")


def clean_detail(text: str) -> str:
    """A provider's message without what only a programmer could read (class names, object reprs, litellm's
    advice), on one line, cut at a word near :data:`_DETAIL_CHARS`, without its closing full stops."""
    detail = _LITELLM_PREFIX.sub("", " ".join(text.split()))
    for noise in _NOISE:
        detail = noise.sub("", detail)
    detail = " ".join(detail.split()).rstrip(" .")
    if len(detail) > _DETAIL_CHARS:
        detail = detail[:_DETAIL_CHARS].rsplit(" ", 1)[0].rstrip(" .,;:") + "…"
    return detail


def sentence(what: str, advice: str = "") -> str:
    """``what`` happened, then what to do, as one sentence with one full stop."""
    what = what.rstrip(" .")
    joint = "; " if ": " in what.split("(", 1)[0] else ": "
    return f"{what}{joint}{advice.rstrip(' .')}." if advice else f"{what}."


def _unreachable(exc: BaseException, text: str, api_base: str | None) -> ModelError | None:
    """A name that does not resolve or a refused connection, by the classes in the exception's causes or the
    words in its text; retried once, quickly."""
    names: set[str] = set()
    texts = [text]
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        names.add(type(seen).__name__)
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    joined = " ".join(texts)
    for key, (classes, words) in _UNREACHABLE_SIGNS.items():
        if names & classes or any(word in joined for word in words):
            kind, what, advice, retries, delay = _UNREACHABLE[key]
            found = _HOST.search(joined)
            host = api_base or (found.group(1) if found else "the provider")
            return ModelError(sentence(what.format(host=host), advice), retryable=True, kind=kind,
                              max_retries=retries, retry_delay=delay)
    return None


def _by_class(exc: BaseException, model: str, api_base: str | None, detail: str) -> ModelError | None:
    # Walk the class hierarchy so subclasses (ContextWindowExceededError < BadRequestError) map first.
    for cls in type(exc).__mro__:
        name = cls.__name__
        if name in _FATAL:
            kind, lead = _FATAL[name]
            return ModelError(sentence(f"{lead} ({model}: {detail})", _hint(kind, model)), kind=kind)
        if name in _RETRYABLE:
            kind, lead = _RETRYABLE[name]
            where = f" at {api_base}" if api_base and kind == "connection" else ""
            return ModelError(sentence(f"{lead}{where} ({detail})", _RETRY_ADVICE), retryable=True, kind=kind)
    return None


_RETRY_ADVICE = "anvil retries it a few times; if it persists, try again later"


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
    """What to do about a failure retrying cannot fix."""
    if kind == "auth":
        provider = model.split("/", 1)[0].upper() if "/" in model else "the provider's"
        return f"set {provider}_API_KEY (or ANVIL_API_KEY) to a valid key"
    if kind in ("not_found", "unknown_model"):
        return "check the model name (--model, or /model NAME)"
    if kind == "context_overflow":
        return "/compact or /clear frees room"
    return "change the request, or /model NAME for another model" if kind in ("bad_request", "content_policy") else ""


@dataclass
class RetryPolicy:
    """Bounded exponential backoff with full jitter."""

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)
