"""Ctrl+C as people coming from other assistants expect it, the same in the TUI and --plain."""

from __future__ import annotations

from anvil.frontend.keys import QUIT_WINDOW, CtrlC


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_ctrl_c_interrupts_a_running_turn_when_nothing_is_typed() -> None:
    keys = CtrlC(Clock())
    assert keys.press(busy=True, has_input=False) == "interrupt"
    assert keys.press(busy=True, has_input=False) == "interrupt"  # never quits while a turn runs


def test_ctrl_c_clears_typed_text_first_whether_or_not_a_turn_runs() -> None:
    keys = CtrlC(Clock())
    assert keys.press(busy=True, has_input=True) == "clear"
    assert keys.press(busy=False, has_input=True) == "clear"


def test_twice_within_a_second_on_an_idle_prompt_quits() -> None:
    clock = Clock()
    keys = CtrlC(clock)
    assert keys.press(busy=False, has_input=False) == "warn"
    clock.now += QUIT_WINDOW * 0.8
    assert keys.press(busy=False, has_input=False) == "quit"


def test_a_second_press_after_the_window_only_warns_again() -> None:
    clock = Clock()
    keys = CtrlC(clock)
    assert keys.press(busy=False, has_input=False) == "warn"
    clock.now += QUIT_WINDOW + 0.5
    assert keys.press(busy=False, has_input=False) == "warn"
    clock.now += 0.2
    assert keys.press(busy=False, has_input=False) == "quit"


def test_clearing_the_input_does_not_count_towards_quitting() -> None:
    clock = Clock()
    keys = CtrlC(clock)
    assert keys.press(busy=False, has_input=True) == "clear"
    clock.now += 0.1
    assert keys.press(busy=False, has_input=False) == "warn"  # the first press on the empty prompt
