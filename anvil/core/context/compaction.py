"""Compaction: make room in the context without forgetting what the person said.

Tier 1 (no model call) replaces old tool results with one-line stubs. The newest results stay verbatim
within a token budget, not a fixed count, so a few huge results cannot keep the context full; results
the model has not seen yet are never stubbed (at most cut to the budget).

Tier 2 (when tier 1 is not enough, or asked for) has the model write a snapshot of the older part of the
conversation, with no tools offered. The history becomes: system prompt (which carries project memory)
+ snapshot + the most recent exchanges within a budget (when asked for, at most half of the conversation, so
a young one is summarised too), cut only where no tool call is separated from its results. The snapshot's
person messages, changed files and todos are written by anvil, not the model (see ``snapshot.py``). A
history too long for one summary request is summarised in parts, then merged.

Budgets are shares of the usable window, so the same rules hold for an 8k local model and a 1M one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from anvil.core.context.meter import CHARS_PER_TOKEN, REPLY_PRIMING, ContextMeter
from anvil.core.context.snapshot import (
    WrittenPaths,
    changed_files,
    content_text,
    cut_middle,
    fit_person_messages,
    is_snapshot,
    is_stub,
    person_messages,
    render_snapshot,
    summary_request,
    tool_calls_by_id,
    tool_stub,
    transcript_blocks,
)
from anvil.core.model.errors import ModelError

KEEP_RESULTS_SHARE = 0.25  # newest tool results kept verbatim within this share of the usable window
TIER1_TARGET_SHARE = 0.5  # tier 1 is enough when the history ends up under this share
RECENT_SHARE = 0.2  # tier 2 keeps the most recent exchanges within this share
PERSON_SHARE = 0.2  # the person's verbatim messages in a snapshot (cut in the middle only beyond it)
SUMMARY_SHARE = 0.1  # the model's part of a snapshot
SUMMARY_INPUT_SHARE = 0.5  # the transcript in one summary request; longer histories go in parts
MIN_STUB_TOKENS = 64  # a result this small costs no more than its stub
MAX_MERGE_ROUNDS = 4
MAX_FAILURES = 3

Summarise = Callable[[list[dict[str, Any]]], Awaitable[str]]


@dataclass
class Outcome:
    """What a compaction produced: the new history (system prompt first) and how it went."""

    messages: list[dict[str, Any]]
    tier: int  # 0: nothing changed, 1: stubs, 2: snapshot
    ok: bool
    message: str = ""
    tokens_after: int = 0


@dataclass
class _Tier2:
    """What tier 2 works from: the history, tier 1's result, and the budgets in this compaction's counts."""

    messages: list[dict[str, Any]]
    tier1: Outcome
    known: dict[int, int]  # id(message) -> tokens, for messages already counted
    usable: int
    trigger: float
    todos: str
    focus: str | None
    force_summary: bool
    written: WrittenPaths | None


class Compactor:
    """Decides when to compact and does it; ``summarise`` makes one no-tools model call and returns its text."""

    def __init__(self, meter: ContextMeter, summarise: Summarise, threshold: float | bool = 0.85) -> None:
        self.meter = meter
        self.summarise = summarise
        # TOML allows `compact_threshold = false` (off) and `true` (the default share)
        self.threshold = 0.85 if threshold is True else 0.0 if threshold is False else float(threshold)
        self.failures = 0
        self.auto_off_reason = ""  # set after MAX_FAILURES failures in a row
        self._scale = 1.0  # provider's count / ours, for the compaction under way

    @property
    def trigger(self) -> int:
        """Tokens above which automatic compaction starts (the usable window when automatic is off)."""
        share = self.threshold if 0 < self.threshold <= 1 else 1.0
        return int(self.meter.usable * share)

    def should_compact(self, used: int) -> bool:
        return self.threshold > 0 and not self.auto_off_reason and used > self.trigger

    def record(self, outcome: Outcome) -> str:
        """Count failures in a row; returns the message for the person when automatic compaction stops."""
        if outcome.ok:
            self.failures, self.auto_off_reason = 0, ""
            return ""
        self.failures += 1
        if self.failures < MAX_FAILURES or self.auto_off_reason:
            return ""
        self.auto_off_reason = outcome.message or "it could not bring the context under the threshold"
        return (f"Automatic compaction is now off: it failed {self.failures} times in a row (last: "
                f"{self.auto_off_reason}). The conversation may outgrow the model's window. Run /compact to "
                "try again, or start a new session and restate the task.")

    # -- tier 1 -----------------------------------------------------------------------------------

    def stub_results(self, messages: list[dict[str, Any]], tokens: list[int], budget: int) -> list[dict[str, Any]]:
        """Old tool results replaced by stubs, newest kept verbatim while they fit ``budget`` tokens."""
        calls = tool_calls_by_id(messages)
        last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        out = list(messages)
        remaining, keeping = budget, True
        for i in range(len(messages) - 1, 0, -1):
            message = messages[i]
            if message.get("role") != "tool" or is_stub(message):
                continue
            size = tokens[i]
            if i > last_assistant:  # the model has not seen it yet: a stub would only make it call again
                if size > budget:
                    out[i] = {**message, "content": cut_middle(content_text(message), budget * CHARS_PER_TOKEN,
                                                               "this output")}
                remaining -= min(size, budget)
                continue
            if keeping and size <= remaining:
                remaining -= size
                continue
            keeping = False  # everything older is stubbed: "newest verbatim" means a contiguous tail
            if size <= MIN_STUB_TOKENS:
                continue
            name, arguments = calls.get(str(message.get("tool_call_id")), (str(message.get("name", "")), ""))
            out[i] = {**message, "content": tool_stub(name or str(message.get("name", "tool")), arguments,
                                                      content_text(message), size)}
        return out

    # -- the whole compaction ---------------------------------------------------------------------

    async def compact(self, messages: list[dict[str, Any]], *, todos: str, focus: str | None = None,
                      force_summary: bool = False, written: WrittenPaths | None = None) -> Outcome:
        """Tier 1, then tier 2 when tier 1 is not enough (or ``force_summary``). ``written``: the paths a tool
        call writes, for the snapshot's list of changed files."""
        used = self.meter.measure(messages)  # the provider's count when it gave one
        tokens = self.meter.message_tokens(messages)
        known = {id(m): t for m, t in zip(messages, tokens, strict=True)}
        # When the provider counts more than our tokenizer does (another tokenizer, hidden overhead), trust it:
        # plan in our counts against a window shrunk by the same ratio.
        counted = self._weigh(messages, known)
        self._scale = min(max(used / counted, 1.0), 4.0) if counted else 1.0
        usable = int(self.meter.usable / self._scale)
        stubbed = self.stub_results(messages, tokens, int(usable * KEEP_RESULTS_SHARE))
        after = self._weigh(stubbed, known)
        changed = any(a is not b for a, b in zip(stubbed, messages, strict=True))
        tier1 = Outcome(stubbed, 1 if changed else 0, True, "", after)
        if not force_summary and after <= usable * TIER1_TARGET_SHARE:
            return tier1
        return await self._tier2(_Tier2(messages, tier1, known, usable, self.trigger / self._scale, todos, focus,
                                        force_summary, written))

    async def _tier2(self, job: _Tier2) -> Outcome:
        """A snapshot of the older part of the conversation, or tier 1's result when a snapshot cannot help."""
        tier1, after = job.tier1, job.tier1.tokens_after
        body = tier1.messages[1:]
        body_tokens = [job.known.get(id(m)) or self.meter.counter.count_message(m) for m in body]
        recent_budget = int(job.usable * RECENT_SHARE)
        if job.force_summary:
            # Asked for (/compact, or an overflow): the recent share of a big window can hold a whole young
            # conversation, which would leave nothing to summarise. Keep at most half of it verbatim instead.
            recent_budget = min(recent_budget, sum(body_tokens) // 2)
        cut = self._recent_cut(body, body_tokens, recent_budget)
        older, recent = body[:cut], body[cut:]
        if not older or (len(older) == 1 and is_snapshot(older[0])):
            fits = after <= job.trigger
            return replace(tier1, ok=fits, message="there is nothing older to summarise yet" if fits else
                           "nothing older is left to summarise: the most recent messages alone fill the context")
        person, cut_any = fit_person_messages(person_messages(older),
                                              int(job.usable * PERSON_SHARE) * CHARS_PER_TOKEN)
        note = "Some very long messages from the person were cut in the middle to fit the context." if cut_any else ""
        files = changed_files(older, job.written) if job.written is not None else []

        def snapshot_history(summary: str | None) -> list[dict[str, Any]]:
            text = render_snapshot(person=person, summary=summary, todos=job.todos, files=files, note=note)
            return [job.messages[0], {"role": "user", "content": text}, *recent]

        # The snapshot's fixed parts alone outweigh what they would replace: a summary cannot save anything.
        if self._weigh(snapshot_history(None), job.known) >= after:
            return replace(tier1, ok=after <= job.trigger,
                           message="the older messages are too short to be worth summarising")
        summary, error = None, ""
        try:
            summary = await self._summary(older, focus=job.focus, todos=job.todos)
        except ModelError as exc:
            error = exc.message
        if summary is None and after <= job.usable:
            return replace(tier1, ok=False,
                           message=f"the summary request failed ({error}); only old tool results were stubbed")
        if summary is not None:
            summary = cut_middle(summary, int(job.usable * SUMMARY_SHARE) * CHARS_PER_TOKEN, "the summary")
        new = snapshot_history(summary)
        new_after = self._weigh(new, job.known)
        if summary is None:
            return Outcome(new, 2, False, f"the summary request failed ({error}); the snapshot keeps the "
                                          "person's messages, changed files and todos but no summary", new_after)
        if new_after >= after:  # a long-winded summary: the stubbed history is the smaller one
            return replace(tier1, ok=after <= job.trigger, message="the summary was longer than what it would "
                           "replace; kept the history with stubs")
        fits = new_after <= job.trigger
        return Outcome(new, 2, fits, "" if fits else "the compacted history is still above the threshold", new_after)

    def _weigh(self, messages: list[dict[str, Any]], known: dict[int, int]) -> int:
        counter = self.meter.counter
        total = sum(known[id(m)] if id(m) in known else counter.count_message(m) for m in messages)
        return total + self.meter.tools_tokens + REPLY_PRIMING

    @staticmethod
    def _recent_cut(body: list[dict[str, Any]], tokens: list[int], budget: int) -> int:
        """Where the kept recent part starts: within ``budget``, after any snapshot, never at a tool result."""
        floor = max((i for i, m in enumerate(body) if is_snapshot(m)), default=-1)
        cut, total = len(body), 0
        for j in range(len(body) - 1, floor, -1):
            total += tokens[j]
            if total > budget:
                break
            if body[j].get("role") != "tool":
                cut = j
        return cut

    async def _summary(self, older: list[dict[str, Any]], *, focus: str | None, todos: str) -> str:
        """One summary request, or one per part and then merges, each within the input budget."""
        budget = max(int(self.meter.usable / self._scale * SUMMARY_INPUT_SHARE), 256)
        parts = self._pack(transcript_blocks(older), budget)
        if len(parts) == 1:
            return await self._ask(summary_request(parts[0], focus=focus, todos=todos))
        notes = [await self._ask(summary_request(part, focus=focus, todos=todos, part=(n, len(parts))))
                 for n, part in enumerate(parts, 1)]
        for _ in range(MAX_MERGE_ROUNDS):
            groups = self._pack([f"PART {n}:\n{note}" for n, note in enumerate(notes, 1)], budget)
            if len(groups) == 1:
                return await self._ask(summary_request(groups[0], focus=focus, todos=todos, partials=True))
            notes = [await self._ask(summary_request(group, focus=focus, todos=todos, partials=True))
                     for group in groups]
        raise ModelError("The partial summaries did not shrink enough to be merged.", kind="compaction")

    async def _ask(self, request: list[dict[str, Any]]) -> str:
        text = (await self.summarise(request)).strip()
        if not text:
            raise ModelError("The model returned an empty summary.", kind="compaction")
        return text

    def _pack(self, blocks: list[str], budget: int) -> list[str]:
        """Blocks joined into chunks of at most ``budget`` tokens; a block too big alone is cut to fit."""
        chunks: list[str] = []
        current: list[str] = []
        size = 0
        for block in blocks:
            tokens = self.meter.counter.count_text(block)
            if tokens > budget:
                # Tokenizers vary around 4 characters a token; 3 leaves room for code and non-English text.
                block, tokens = cut_middle(block, budget * 3, "this message"), budget
            if current and size + tokens > budget:
                chunks.append("\n\n".join(current))
                current, size = [], 0
            current.append(block)
            size += tokens
        if current:
            chunks.append("\n\n".join(current))
        return chunks or [""]
