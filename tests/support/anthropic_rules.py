"""What the Anthropic Messages API checks and counts, for the local server in ``anthropic_server.py``.

- :func:`validate` rejects what the real API rejects with a 400 ``invalid_request_error``: a malformed
  request or message, empty text blocks, tool uses without their results (and results without their uses),
  more than four ``cache_control`` breakpoints, a thinking budget below 1,024 tokens or not below
  ``max_tokens``, a thinking block whose signature does not match its text, an assistant message that ends
  with a thinking block, and the API's rule for the assistant message of the current tool-use loop (the
  "final" one): with thinking on it must start with its thinking block, with thinking off it may contain none.
- :class:`PromptCache` reports caching the way the API does: the prompt is the sequence of blocks tools,
  system, messages (in that order); a breakpoint is a block marked ``cache_control``. A request reads from
  cache the longest prefix that ends at a block boundary at most 20 blocks before one of its breakpoints and
  that an earlier request wrote; it writes the prefix up to its last breakpoint (when at least the model's
  minimum cacheable length). ``input_tokens`` is what is left: the tokens after the cached and written parts.
- Tokens are counted deterministically: a block is a quarter of the characters of its canonical JSON
  (``cache_control`` left out, since a marker does not change the content).

Signatures are an HMAC of the thinking text under a key only this module knows, so a block the client
changed, or made up, fails as it would against the real API.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
MIN_THINKING_BUDGET = 1024
_SIGNING_KEY = b"anvil-test-anthropic-fixture"
USER_BLOCKS = {"text", "image", "document", "tool_result", "search_result"}
ASSISTANT_BLOCKS = {"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"}
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


class InvalidRequest(Exception):
    """A request the API answers with 400 invalid_request_error; the message is the API's wording."""


def sign(thinking: str) -> str:
    digest = hmac.new(_SIGNING_KEY, thinking.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _canonical(block: Any) -> str:
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


# -- validation ---------------------------------------------------------------------------------------

def thinking_enabled(request: dict[str, Any]) -> bool:
    thinking = request.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in {"enabled", "adaptive"}


def validate(request: dict[str, Any]) -> None:
    """Raise :class:`InvalidRequest` for what the API would reject."""
    if not isinstance(request.get("model"), str):
        raise InvalidRequest("model: Field required")
    if not isinstance(request.get("max_tokens"), int):
        raise InvalidRequest("max_tokens: Field required")
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages: at least one message is required")
    _validate_thinking_param(request)
    _validate_tools(request.get("tools") or [])
    for index, message in enumerate(messages):
        _validate_message(index, message)
    _validate_tool_pairs(messages)
    _validate_breakpoints(request)
    _validate_thinking_loop(messages, thinking_enabled(request))


def _validate_thinking_param(request: dict[str, Any]) -> None:
    thinking = request.get("thinking")
    if thinking is None or not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
        raise InvalidRequest(f"thinking.enabled.budget_tokens: Input should be greater than or equal to "
                             f"{MIN_THINKING_BUDGET}")
    if budget >= request["max_tokens"]:
        raise InvalidRequest("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                             f"documentation at {THINKING_DOCS}#max-tokens-and-context-window-size")


def _validate_tools(tools: list[Any]) -> None:
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not tool.get("name"):
            raise InvalidRequest(f"tools.{index}.name: Field required")
        if "input_schema" not in tool and "type" not in tool:
            raise InvalidRequest(f"tools.{index}.input_schema: Field required")


def _validate_message(index: int, message: Any) -> None:
    role = message.get("role") if isinstance(message, dict) else None
    if role not in {"user", "assistant"}:
        raise InvalidRequest(f"messages.{index}.role: Input should be 'user' or 'assistant'")
    if index == 0 and role != "user":
        raise InvalidRequest("messages: first message must use the \"user\" role")
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            raise InvalidRequest(f"messages.{index}: user messages must have non-empty content")
        return
    if not isinstance(content, list) or not content:
        raise InvalidRequest(f"messages.{index}.content: Input should be a valid list")
    allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS
    for position, block in enumerate(content):
        _validate_block(f"messages.{index}.content.{position}", block, allowed)
    if role == "assistant" and content[-1].get("type") in {"thinking", "redacted_thinking"}:
        raise InvalidRequest(f"messages.{index}: The final block in an assistant message cannot be `thinking`.")


def _validate_block(where: str, block: Any, allowed: set[str]) -> None:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind not in allowed:
        raise InvalidRequest(f"{where}.type: Input tag '{kind}' found using 'type' does not match any of the "
                             f"expected tags: {', '.join(sorted(allowed))}")
    if kind == "text" and not block.get("text"):
        raise InvalidRequest(f"{where}: text content blocks must be non-empty")
    if kind == "thinking":
        signature = block.get("signature")
        if not isinstance(signature, str) or not signature:
            raise InvalidRequest(f"{where}.thinking.signature: Field required")
        if not hmac.compare_digest(signature, sign(str(block.get("thinking", "")))):
            raise InvalidRequest(f"{where}: Invalid `signature` in `thinking` block")
    if kind == "redacted_thinking" and not isinstance(block.get("data"), str):
        raise InvalidRequest(f"{where}.redacted_thinking.data: Field required")
    if kind == "tool_use" and not (block.get("id") and block.get("name") and isinstance(block.get("input"), dict)):
        raise InvalidRequest(f"{where}.tool_use: id, name and an object input are required")
    if kind == "tool_result" and not block.get("tool_use_id"):
        raise InvalidRequest(f"{where}.tool_result.tool_use_id: Field required")


def _validate_tool_pairs(messages: list[dict[str, Any]]) -> None:
    """Each tool_use is answered by a tool_result in the next message, and every result answers a use."""
    for index, message in enumerate(messages):
        blocks = _content_blocks(message["content"])
        if message["role"] == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            previous = _content_blocks(messages[index - 1]["content"]) if index else []
            uses = {b.get("id") for b in previous if b.get("type") == "tool_use"}
            unexpected = [r for r in results if r not in uses]
            if unexpected:
                raise InvalidRequest(f"messages.{index}.content.0: unexpected `tool_use_id` found in `tool_result` "
                                     f"blocks: {unexpected[0]}. Each `tool_result` block must have a corresponding "
                                     "`tool_use` block in the previous message.")
            continue
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        following = _content_blocks(messages[index + 1]["content"]) if index + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for b in following or [] if b.get("type") == "tool_result"}
        missing = [u for u in uses if u not in answered]
        if missing and following is not None:
            raise InvalidRequest(f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                                 f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                                 "corresponding `tool_result` block in the next message.")


def _validate_breakpoints(request: dict[str, Any]) -> None:
    found = sum(1 for block in prompt_blocks(request) if isinstance(block, dict) and "cache_control" in block)
    if found > MAX_BREAKPOINTS:
        raise InvalidRequest(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                             f"Found {found}.")


def _validate_thinking_loop(messages: list[dict[str, Any]], thinking: bool) -> None:
    """The assistant message of the current tool-use loop starts with thinking when thinking is on, and holds
    none when it is off."""
    last = messages[-1]
    if last["role"] != "user" or not any(b.get("type") == "tool_result" for b in _content_blocks(last["content"])):
        return  # not inside a tool-use loop: earlier turns' thinking may be left out
    index = len(messages) - 2
    blocks = _content_blocks(messages[index]["content"])
    if not thinking:
        if any(b.get("type") in {"thinking", "redacted_thinking"} for b in blocks):
            raise InvalidRequest(f"messages.{index}.content.0: When thinking is disabled, an `assistant` message in "
                                 "the final position cannot contain `thinking`. To use thinking blocks, enable "
                                 "`thinking` in your request.")
        return
    first = blocks[0]
    if first.get("type") not in {"thinking", "redacted_thinking"}:
        raise InvalidRequest(
            f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend "
            "you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
            f"Please consult our documentation at {THINKING_DOCS}")


# -- the prompt as blocks, and the cache ------------------------------------------------------------------

def prompt_blocks(request: dict[str, Any]) -> list[Any]:
    """Tools, system and messages as one sequence of blocks, the order the cache prefix follows."""
    blocks: list[Any] = list(request.get("tools") or [])
    system = request.get("system")
    blocks += _content_blocks(system) if system else []
    for message in request.get("messages") or []:
        blocks.append({"role": message.get("role")})  # a message boundary: role changes change the prefix
        blocks += _content_blocks(message.get("content"))
    return blocks


@dataclass
class CacheReport:
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


@dataclass
class PromptCache:
    """Prefixes written by earlier requests, by (model, digest of the prefix)."""

    min_tokens: int = 1024
    entries: set[tuple[str, str]] = field(default_factory=set)

    def account(self, request: dict[str, Any]) -> CacheReport:
        blocks = prompt_blocks(request)
        model = str(request.get("model"))
        digest = hashlib.sha256()
        digests: list[str] = []
        sizes: list[int] = []  # tokens of the prefix ending at each block
        total = 0
        for block in blocks:
            text = _canonical(block)
            digest.update(text.encode())
            digests.append(digest.copy().hexdigest())
            total += tokens(text) if not (isinstance(block, dict) and set(block) == {"role"}) else 1
            sizes.append(total)
        breakpoints = [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
        read = 0
        for point in breakpoints:
            for end in range(point, max(-1, point - LOOKBACK_BLOCKS), -1):
                if (model, digests[end]) in self.entries:
                    read = max(read, sizes[end])
                    break
        written = 0
        if breakpoints and sizes[breakpoints[-1]] >= self.min_tokens:
            written = max(0, sizes[breakpoints[-1]] - read)
            for point in breakpoints:
                if sizes[point] >= self.min_tokens:
                    self.entries.add((model, digests[point]))
        return CacheReport(total - read - written, read, written)
