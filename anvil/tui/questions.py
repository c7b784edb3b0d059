"""The model asking the person: a question (ask_user) and a plan to approve (exit_plan_mode).

Both are modals pushed from the agent worker, like approvals; the engine's tool waits on the event's future
until the answer comes back. Keyboard first: a number picks an option, Enter sends typed text, Esc answers
nothing (the model is told to decide itself); for a plan, ``y`` approves and ``n`` asks for feedback.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, Static, TextArea

from anvil.core.events import PlanDecision, PlanProposed, QuestionAsked

DIALOG_CSS = """
    align: center middle;
    #dialog {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        padding: 0 1; background: $surface; border: thick $accent;
        border-title-style: bold; border-title-color: $text-accent;
    }
    #body { height: auto; max-height: 1fr; }
    .hint { color: $text-muted; }
    .option { padding-left: 1; }
    Input { margin-top: 1; }
"""


class QuestionScreen(ModalScreen[str]):
    DEFAULT_CSS = f"QuestionScreen {{{DIALOG_CSS}}}"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "skip", "No answer")]

    def __init__(self, request: QuestionAsked) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "The model asks"
            with VerticalScroll(id="body"):
                yield Static(self.request.question, markup=False)
                for number, option in enumerate(self.request.options[:9], start=1):
                    yield Static(Content.assemble((f"{number}  ", "bold $accent"), option), classes="option")
            placeholder = "Your answer (or a number)" if self.request.options else "Your answer"
            yield Input(placeholder=placeholder, id="answer")
            yield Static("Enter sends · Esc leaves it to the model", classes="hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#answer")
    def _send(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        options = self.request.options
        if text.isdigit() and 1 <= int(text) <= min(len(options), 9):
            text = options[int(text) - 1]
        self.dismiss(text)

    def action_skip(self) -> None:
        self.dismiss("")

    def answer_interrupted(self) -> None:
        """anvil is closing: no answer (the interrupted turn ends)."""
        self.dismiss("")


class PlanScreen(ModalScreen[PlanDecision]):
    DEFAULT_CSS = f"PlanScreen {{{DIALOG_CSS}}}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "approve", "Approve"),
        Binding("e", "edit", "Edit the plan"),
        Binding("n", "reject", "Reject with feedback"),
        Binding("ctrl+s", "save", "Approve the edited plan", show=False),
        Binding("escape", "back", "Back / reject"),
    ]
    HINT = "y approve and start · e edit · n reject with feedback · Esc reject"

    def __init__(self, request: PlanProposed) -> None:
        super().__init__()
        self.request = request
        self.rejecting = False
        self.editing = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Approve this plan?"
            with VerticalScroll(id="body"):
                yield Markdown(self.request.plan)
            feedback = Input(placeholder="What should change?", id="feedback")
            feedback.display = False
            yield feedback
            editor = TextArea(self.request.plan, id="editor", soft_wrap=True)
            editor.display = False
            yield editor
            yield Static(self.HINT, classes="hint", id="hint")

    def on_mount(self) -> None:
        self.query_one("#body").focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While feedback or the plan is typed, y, e and n are letters, not answers.
        if action == "save":
            return self.editing
        return not ((self.rejecting or self.editing) and action in {"approve", "reject", "edit"})

    def action_edit(self) -> None:
        self.editing = True
        self.query_one("#body").display = False
        editor = self.query_one("#editor", TextArea)
        editor.display = True
        editor.focus()
        self.query_one("#hint", Static).update("Ctrl+S approves the plan as edited · Esc back")

    def action_save(self) -> None:
        edited = self.query_one("#editor", TextArea).text.strip()
        self.dismiss(PlanDecision(True, edited or self.request.plan))

    def action_approve(self) -> None:
        self.dismiss(PlanDecision(True, self.request.plan))

    def action_reject(self) -> None:
        self.rejecting = True
        self.query_one("#feedback").display = True
        self.query_one("#feedback").focus()
        self.query_one("#hint", Static).update("Enter sends the feedback · Esc back")

    def answer_interrupted(self) -> None:
        """anvil is closing: the plan is not approved (the interrupted turn ends)."""
        self.dismiss(PlanDecision(False, feedback=""))

    def action_back(self) -> None:
        if self.editing:
            self.editing = False
            self.query_one("#editor").display = False
            self.query_one("#body").display = True
            self.query_one("#body").focus()
            self.query_one("#hint", Static).update(self.HINT)
        elif self.rejecting:
            self.rejecting = False
            self.query_one("#feedback").display = False
            self.query_one("#body").focus()
            self.query_one("#hint", Static).update(self.HINT)
        else:
            self.dismiss(PlanDecision(False, feedback=""))

    @on(Input.Submitted, "#feedback")
    def _send(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PlanDecision(False, feedback=event.value.strip()))
