"""The status bar: model, approval mode, whether commands are sandboxed, a workflow job's phase, what the model
is doing, the context gauge and the cost so far.

It is one Static re-rendered from a small state object, so an update during a busy stream costs one
line of layout. The gauge is a bar of cells coloured by how full the window is, with a mark at the
compaction threshold, then the percent and used/window tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

#: the approval modes as the bar shows them: the names /mode, --mode and the README use
MODE_LABELS = {"ask": "ask", "accept_edits": "accept edits", "auto": "auto", "plan": "plan"}
#: the shortest stretch of activity text worth showing; below it the text goes
MIN_PHASE = 8
GAUGE_CELLS = 12


@dataclass
class StatusState:
    model: str = ""
    mode: str = "ask"
    phase: str = ""
    used: int = 0
    window: int = 0
    estimated: bool = False
    cost: float | None = 0.0  # None: unknown (no price for the model)
    threshold: float | None = 0.85
    busy: bool = False
    #: "sandboxed", "not sandboxed" or "sandbox off" (SandboxStatus.label)
    sandbox: str = ""
    #: where a workflow job stands ("phase 3 · tactical"), "" without one
    job: str = ""


def tokens(count: int) -> str:
    """12345 → "12.3k"; short so the gauge fits a narrow terminal."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1000:.0f}k"
    if count >= 1000:
        return f"{count / 1000:.1f}k"
    return str(count)


def gauge_style(fraction: float, threshold: float | None) -> str:
    """Green while there is room, amber when compaction is near, red at or past it."""
    limit = threshold or 0.9
    if fraction >= limit:
        return "$error"
    if fraction >= limit - 0.2:
        return "$warning"
    return "$success"


def render_gauge(state: StatusState, cells: int = GAUGE_CELLS) -> Content:
    fraction = state.used / state.window if state.window else 0.0
    filled = min(cells, round(fraction * cells))
    mark = round(state.threshold * cells) if state.threshold else None
    style = gauge_style(fraction, state.threshold)
    parts: list[str | tuple[str, str]] = []
    for cell in range(cells):
        if cell == mark:
            parts.append(("│", "$text-error" if fraction >= (state.threshold or 1) else "$text-muted"))
        parts.append(("█", style) if cell < filled else ("░", "$text-muted"))
    approx = "~" if state.estimated else ""
    window = tokens(state.window) if state.window else "?"
    parts.append((f" {approx}{fraction:.0%} {tokens(state.used)}/{window}", style))
    return Content.assemble(*parts)


def cost_label(cost: float | None) -> str:
    """$0.0123, $1.23, or $? when the price is unknown (never a made-up $0)."""
    if cost is None:
        return "$?"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def render_status(state: StatusState, width: int = 200) -> Content:
    """The bar's text, never wider than ``width``. The gauge and the cost keep their place: the activity text
    (the phase) is what gets cut, then the key hint, the sandbox label and last the model name."""
    sep = (" · ", "$text-muted")
    mode_style = {"ask": "$text-primary", "accept_edits": "$text-warning", "auto": "bold $text-error"}
    mode = (MODE_LABELS.get(state.mode, state.mode), mode_style.get(state.mode, ""))
    hint = [(" (shift+tab)", "$text-muted")] if width >= 110 else []
    sandbox = [sep, (state.sandbox, "$text-success" if state.sandbox == "sandboxed" else "$text-warning")] \
        if state.sandbox else []
    job = [sep, (state.job, "bold $text-accent")] if state.job else []
    tail = Content.assemble(sep, render_gauge(state), sep, (cost_label(state.cost), "$text-muted"))
    model = state.model or "starting…"
    head = Content.assemble((model, "bold"), sep, mode, *hint, *sandbox, *job)
    if head.cell_length + tail.cell_length > width:  # too narrow even without the phase: shed the extras
        kept = Content.assemble(sep, mode, *job)
        room = max(8, width - tail.cell_length - kept.cell_length)
        model = model if len(model) <= room else model[: room - 1] + "…"
        head = Content.assemble((model, "bold"), kept)
    room = width - head.cell_length - tail.cell_length - len(" · ")
    parts: list[str | tuple[str, str] | Content] = [head]
    if state.phase and room >= MIN_PHASE:
        phase = state.phase if len(state.phase) <= room else state.phase[: room - 1] + "…"
        parts += [sep, (phase, "italic $text-accent" if state.busy else "$text-muted")]
    return Content.assemble(*parts, tail)


class StatusBar(Static):
    DEFAULT_CLASSES = "status"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.state = StatusState()

    def on_mount(self) -> None:
        self.refresh_status()

    def update_state(self, **changes: object) -> None:
        for key, value in changes.items():
            setattr(self.state, key, value)
        self.refresh_status()

    def refresh_status(self) -> None:
        self.update(render_status(self.state, self.size.width or 200))

    def on_resize(self) -> None:
        self.refresh_status()
