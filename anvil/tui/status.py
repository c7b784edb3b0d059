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

MODE_LABELS = {"ask": "ask", "accept_edits": "accept edits", "auto": "auto-approve", "plan": "plan"}
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
    """The bar's text; on a narrow terminal the key hint goes and the phase is cut, the gauge always stays."""
    sep = (" · ", "$text-muted")
    mode_style = {"ask": "$text-primary", "accept_edits": "$text-warning", "auto": "bold $text-error"}
    narrow = width < 110
    parts: list[str | tuple[str, str] | Content] = [
        (state.model or "starting…", "bold"), sep,
        (MODE_LABELS.get(state.mode, state.mode), mode_style.get(state.mode, "")),
    ]
    if not narrow:
        parts.append((" (shift+tab)", "$text-muted"))
    if state.sandbox:
        parts += [sep, (state.sandbox, "$text-success" if state.sandbox == "sandboxed" else "$text-warning")]
    if state.job:
        parts += [sep, (state.job, "bold $text-accent")]
    if state.phase:
        limit = max(12, width - 75) if narrow else 60
        phase = state.phase if len(state.phase) <= limit else state.phase[: limit - 1] + "…"
        parts += [sep, (phase, "italic $text-accent" if state.busy else "$text-muted")]
    parts += [sep, render_gauge(state), sep, (cost_label(state.cost), "$text-muted")]
    return Content.assemble(*parts)


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
