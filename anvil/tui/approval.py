"""The approval modal: the person's say over a tool call the policy would not run on its own.

Keyboard first, one key per answer: ``y`` allow once, ``a`` always allow (then ``s``/``p``/``e`` for the
scope, with the exact rule on screen), ``n`` deny, ``d`` deny with a message to the model, Esc deny
(or back out of a sub-step). The dialog returns an :class:`ApprovalDecision`; the app passes it on to
``request.answer``. Nothing here decides policy: the reasons and the suggested rule come from the core.

Two guards against approving by accident, the complaint people have about other assistants:
Enter does nothing until a button is focused on purpose (the first focus is the scrollable body, not a
button), and the allowing keys only work after :attr:`ApprovalScreen.ARM_DELAY` so a ``y`` typed into the
prompt just as the dialog opens is not taken as a yes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from anvil.core.events import ApprovalDecision, ApprovalRequested
from anvil.frontend.lines import always_patterns, cwd_text, no_always_text, rules_text, scope_choices
from anvil.tui.diff_view import DiffView, highlight_code
from anvil.tui.themes import pygments_style_for

Step = Literal["choose", "scope", "message"]
Scope = Literal["session", "project", "user"]

#: The tool whose rules are command patterns; for every other tool a rule is the tool's name.
_ARG_VALUE_CHARS = 160


def compact_args(args: dict[str, Any], skip: tuple[str, ...] = ()) -> Text:
    """Arguments as ``key: value`` lines, long values cut, so any tool's request fits the dialog."""
    text = Text()
    for key, value in args.items():
        if key in skip:
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines = shown.splitlines() or [""]
        first = lines[0]
        if len(first) > _ARG_VALUE_CHARS:
            first = first[:_ARG_VALUE_CHARS] + "…"
        if len(lines) > 1:
            first += f"  … ({len(lines)} lines)"
        if text:
            text.append("\n")
        text.append(f"{key}: ", style="bold")
        text.append(first)
    return text


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Ask whether a tool call may run; dismisses with the person's :class:`ApprovalDecision`."""

    #: Seconds after opening during which the allowing keys (y, a) are ignored. Tests set it to 0.
    ARM_DELAY: ClassVar[float] = 0.3
    AUTO_FOCUS = "#approval-body"
    #: Terminal columns below which the answer buttons wrap onto two rows.
    NARROW_WIDTH: ClassVar[int] = 76

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "allow_once", "Allow once"),
        Binding("a", "always", "Always allow…"),
        Binding("n", "deny", "Deny"),
        Binding("d", "deny_with_message", "Deny with message"),
        Binding("s", "remember('session')", "This session"),
        Binding("p", "remember('project')", "This project"),
        Binding("e", "remember('user')", "Everywhere"),
        Binding("escape", "escape", "Deny / back"),
    ]

    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
        #approval-dialog {
            width: 90%;
            max-width: 120;
            height: auto;
            max-height: 90%;
            padding: 0 1;
            background: $surface;
            border: thick $primary;
            border-title-style: bold;
            border-title-color: $text-primary;
            &.-risky { border: thick $warning; border-title-color: $text-warning; }
            /* a diff earns the room for a side-by-side view on wide terminals */
            &.-with-diff { max-width: 220; }
        }
        /* Title and answers are docked so a long diff scrolls between them instead of pushing the
           answers off screen. */
        #approval-title { dock: top; height: auto; margin-bottom: 1; text-style: bold; }
        #approval-actions { dock: bottom; height: auto; }
        #approval-body { height: auto; max-height: 100%; }
        #approval-body > * { margin-bottom: 1; }
        #approval-body > *:last-child { margin-bottom: 0; }
        .approval-command { background: $panel; padding: 0 1; }
        #approval-body > .approval-command { margin-bottom: 0; }
        .approval-cwd { color: $text-muted; }
        .approval-reasons { color: $text-warning; }
        .approval-args { background: $panel; padding: 0 1; }
        .approval-detail { color: $text-muted; }
        .approval-note { color: $text-muted; text-style: italic; }
        .approval-step { height: auto; margin-top: 1; display: none; }
        .approval-buttons { height: auto; }
        .approval-buttons Button { margin-right: 1; min-width: 0; padding: 0; }
        /* too narrow for the four answers in a row: two rows of two */
        &.-narrow .approval-buttons { layout: grid; grid-size: 2; grid-gutter: 0 1; }
        &.-narrow .approval-buttons Button { width: 100%; margin-right: 0; }
        .approval-scope-option { width: auto; min-width: 0; padding: 0 1; margin-left: 2; }
        .approval-hint { color: $text-muted; }
        &.-step-choose #approval-choose { display: block; }
        &.-step-scope #approval-scope { display: block; }
        &.-step-message #approval-message { display: block; }
    }
    """

    step: reactive[Step] = reactive("choose", init=False)

    def __init__(self, request: ApprovalRequested, root: Path) -> None:
        super().__init__()
        self.request = request
        self.root = root  # the project: rule files inside it are shown relative to it
        self._armed = self.ARM_DELAY <= 0
        self._answered = False

    @property
    def patterns(self) -> tuple[str, ...]:
        """Every rule "always allow" saves (one per part of a compound command no rule covers); empty when none
        can be offered (a command that did not parse)."""
        return always_patterns(self.request)

    @property
    def pattern(self) -> str | None:
        return self.patterns[0] if self.patterns else None

    # -- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        request = self.request
        classes = " ".join(name for name, on in (("-risky", request.reasons), ("-with-diff", request.diff)) if on)
        with Vertical(id="approval-dialog", classes=classes) as dialog:
            dialog.border_title = f"Approve {request.tool}?"
            yield Static(request.title or request.tool, id="approval-title", markup=False)
            with VerticalScroll(id="approval-body"):
                yield from self._compose_body()
            with Vertical(id="approval-actions"):
                yield from self._compose_steps()

    def _compose_steps(self) -> ComposeResult:
        with Vertical(id="approval-choose", classes="approval-step"):
            with Horizontal(classes="approval-buttons"):
                yield Button("y Allow once", variant="success", action="screen.allow_once", compact=True)
                yield Button("a Always allow…", action="screen.always", compact=True,
                             id="approval-always", disabled=self.pattern is None)
                yield Button("n Deny", variant="error", action="screen.deny", compact=True)
                yield Button("d Deny with message", action="screen.deny_with_message", compact=True)
            if self.pattern is None:
                yield Static(no_always_text(self.request), classes="approval-note", id="approval-no-always")
            yield Static("esc deny  ·  ↑↓ PgUp PgDn scroll  ·  tab buttons",
                         classes="approval-hint")
        with Vertical(id="approval-scope", classes="approval-step"):
            many = len(self.patterns) > 1
            heading = Content.from_markup(
                f"Always allow [b $text-accent]$rules[/] from now on? {'These rules are' if many else 'The rule is'} "
                "saved for:", rules=rules_text(self.patterns) if self.patterns else "")
            yield Static(heading, id="approval-scope-text")
            # One button per scope, labelled with its key and where the rule is kept: the hint and the
            # mouse target are the same line.
            for choice in scope_choices(self.request, self.root):
                yield Button(f"{choice.key} {choice.text}", action=f"screen.remember('{choice.scope}')",
                             compact=True, id=f"approval-scope-{choice.scope}", classes="approval-scope-option")
            yield Static("esc back", classes="approval-hint")
        with Vertical(id="approval-message", classes="approval-step"):
            yield Static("Deny, and tell the model why or what to do instead:")
            yield Input(placeholder="e.g. use the Makefile target instead", id="approval-input")
            yield Static("enter send and deny  ·  esc back", classes="approval-hint")

    def _compose_body(self) -> ComposeResult:
        request = self.request
        style = pygments_style_for(self.app.theme)
        if request.command is not None:
            yield Static(highlight_code(request.command, "bash", style), classes="approval-command",
                         id="approval-command")
            where = cwd_text(request)
            if where:
                yield Static(where, classes="approval-cwd", id="approval-cwd", markup=False)
            extra = compact_args(request.args, skip=("command",))
            if extra:
                yield Static(extra, classes="approval-args")
        if request.reasons:
            reasons = Text("\n").join(Text(f"⚠ {reason}") for reason in request.reasons)
            yield Static(reasons, classes="approval-reasons", id="approval-reasons")
        if request.diff:
            path = request.args.get("path")
            yield DiffView(request.diff, path=path if isinstance(path, str) else None, id="approval-diff")
        elif request.command is None and request.args:
            yield Static(compact_args(request.args), classes="approval-args", id="approval-args")
        if request.detail:
            yield Static(request.detail, classes="approval-detail", markup=False)

    def on_mount(self) -> None:
        self.set_class(True, "-step-choose")
        self.watch(self.app, "theme", self._rehighlight, init=False)
        if not self._armed:
            self.set_timer(self.ARM_DELAY, self._arm)

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < self.NARROW_WIDTH, "-narrow")

    def _rehighlight(self) -> None:
        # /theme can switch while the dialog is open; the command's colours come from the theme's pygments style.
        command = self.request.args.get("command")
        for widget in self.query("#approval-command").results(Static):
            widget.update(highlight_code(str(command), "bash", pygments_style_for(self.app.theme)))

    def _arm(self) -> None:
        self._armed = True
        self.refresh_bindings()

    def watch_step(self, old: Step, new: Step) -> None:
        self.set_class(False, f"-step-{old}")
        self.set_class(True, f"-step-{new}")
        if new == "message":
            self.query_one("#approval-input", Input).focus()
        else:
            self.query_one("#approval-body").focus()
        self.refresh_bindings()

    # -- actions --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Bindings follow the step, so a key means one thing at a time and the letters typed into the
        # message box never reach an action.
        if action in ("allow_once", "always"):
            if action == "always" and self.pattern is None:
                return False
            return self.step == "choose" and self._armed
        if action in ("deny", "deny_with_message"):
            return self.step == "choose"
        if action == "remember":
            return self.step == "scope"
        return True

    def _finish(self, decision: ApprovalDecision) -> None:
        # Two quick keys ("y" then "n") must not answer twice or dismiss a screen that is already gone.
        if not self._answered:
            self._answered = True
            self.dismiss(decision)

    def interrupted(self) -> None:
        """Ctrl+C interrupted the turn: the request is answered as interrupted (nothing runs)."""
        self._finish(ApprovalDecision(allow=False, by="interrupt"))

    def action_allow_once(self) -> None:
        self._finish(ApprovalDecision(allow=True, by="user"))

    def action_always(self) -> None:
        self.step = "scope"

    def action_remember(self, scope: Scope) -> None:
        self._finish(ApprovalDecision(allow=True, remember=scope, pattern=self.pattern, by="user",
                                      patterns=self.patterns))

    def action_deny(self) -> None:
        self._finish(ApprovalDecision(allow=False, by="user"))

    def answer_interrupted(self) -> None:
        """anvil is closing: the call does not run, and the interrupted turn ends."""
        self._finish(ApprovalDecision(allow=False, by="interrupt"))

    def action_deny_with_message(self) -> None:
        self.step = "message"

    def action_escape(self) -> None:
        if self.step == "choose":
            self.action_deny()
        else:
            self.step = "choose"

    @on(Input.Submitted, "#approval-input")
    def _send_denial(self, event: Input.Submitted) -> None:
        event.stop()
        self._finish(ApprovalDecision(allow=False, message=event.value.strip(), by="user"))
