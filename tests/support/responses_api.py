"""OpenAI's Responses API stream (``POST /v1/responses``), for the scripted server in ``openai_server.py``.

Models that speak only this API (OpenAI's codex models) reach it through litellm's bridge for chat-completions
callers, which translates anvil's messages into ``input`` items and this stream back into chat chunks. The
events follow OpenAI's documented sequence: ``response.created``, then for each output item
``response.output_item.added``, its deltas (``response.reasoning_summary_text.delta``,
``response.output_text.delta``, ``response.function_call_arguments.delta``) and ``response.output_item.done``,
and last ``response.completed`` (or ``response.incomplete`` when the reply passed ``max_output_tokens``) with the
whole response and its usage. Turns are the scripted server's (``text``, ``reasoning``, ``tool_calls``, ``usage``).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any


def _response(request: dict[str, Any], status: str, output: list[dict[str, Any]],
              usage: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": "resp_scripted", "object": "response", "created_at": int(time.time()), "status": status,
            "model": request.get("model", "scripted"), "output": output, "usage": usage,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": request.get("tools", []),
            "error": None, "instructions": request.get("instructions")}


class _Output:
    """Characters of output left under ``max_output_tokens`` (4 a token)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit * 4 if limit else None
        self.used = 0

    def take(self, text: str) -> str:
        if self.left is not None:
            text, self.left = text[:max(0, self.left)], self.left - len(text)
        self.used += len(text)
        return text

    @property
    def cut(self) -> bool:
        return self.left is not None and self.left < 0


def responses_events(turn: dict[str, Any], request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    budget = _Output(request.get("max_output_tokens"))
    output: list[dict[str, Any]] = []
    yield {"type": "response.created", "response": _response(request, "in_progress", [], None)}
    items = _items(turn)
    for index, (item, field, pieces) in enumerate(items):
        if budget.cut:
            break
        yield {"type": "response.output_item.added", "output_index": index, "item": {**item, field: ""}
               if field == "arguments" else item}
        text = ""
        for piece in pieces:
            piece = budget.take(piece)
            if piece:
                text += piece
                yield _delta(item, index, piece)
            if budget.cut:
                break
        done = _finished(item, field, text)
        output.append(done)
        yield {"type": "response.output_item.done", "output_index": index, "item": done}
    usage = _usage(turn, request, budget.used)
    status = "incomplete" if budget.cut else "completed"
    yield {"type": f"response.{status}", "response": _response(request, status, output, usage)}


def _items(turn: dict[str, Any]) -> list[tuple[dict[str, Any], str, list[str]]]:
    """(item as added, the field its deltas fill, the pieces) for each output item of the turn."""
    items: list[tuple[dict[str, Any], str, list[str]]] = []
    reasoning = turn.get("reasoning", "")
    if reasoning:
        items.append(({"id": "rs_1", "type": "reasoning", "summary": []}, "summary", _pieces(reasoning)))
    text = turn.get("text", "")
    if text:
        items.append(({"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant",
                       "content": []}, "content", _pieces(text)))
    for call in turn.get("tool_calls", []):
        args = call.get("arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args)
        items.append(({"id": f"fc_{secrets.token_hex(4)}", "type": "function_call", "status": "in_progress",
                       "call_id": call.get("id") or f"call_{secrets.token_hex(6)}", "name": call["name"]},
                      "arguments", _pieces(raw)))
    return items


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _delta(item: dict[str, Any], index: int, piece: str) -> dict[str, Any]:
    kind = {"reasoning": "response.reasoning_summary_text.delta", "message": "response.output_text.delta",
            "function_call": "response.function_call_arguments.delta"}[item["type"]]
    event: dict[str, Any] = {"type": kind, "item_id": item["id"], "output_index": index, "delta": piece}
    if item["type"] == "reasoning":
        event["summary_index"] = 0
    if item["type"] == "message":
        event["content_index"] = 0
    return event


def _finished(item: dict[str, Any], field: str, text: str) -> dict[str, Any]:
    if item["type"] == "reasoning":
        return {**item, "summary": [{"type": "summary_text", "text": text}]}
    if item["type"] == "message":
        return {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return {**item, "status": "completed", field: text}


def _usage(turn: dict[str, Any], request: dict[str, Any], output_chars: int) -> dict[str, Any]:
    scripted = turn.get("usage") or {}
    prompt = scripted.get("prompt_tokens", len(json.dumps(request.get("input", []))) // 4)
    completion = scripted.get("completion_tokens", max(1, output_chars // 4))
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": scripted.get("cached_tokens", 0)},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": scripted.get("reasoning_tokens", 0)},
            "total_tokens": prompt + completion}
