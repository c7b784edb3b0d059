"""Paint a typed key at once, instead of waiting for the screen's next frame.

Textual draws a change through a chain of hops: the widget's idle handler tells the screen, the screen's
idle handler starts its update timer, and the timer's tick lays out and draws the whole screen. While a
reply streams, every hop waits behind the Markdown work (parsing, mounting blocks, layouts of the
transcript), and ``Markdown.append`` holds ``App.batch_update()`` across its mounts, which holds frames back
entirely. A key then took 40 ms at the median and 90 ms at the 95th percentile to show, although the key
itself was handled in a few milliseconds (benchmarks/README.md).

A keystroke only changes the field it was typed into, whose place on the screen is known from the last
frame. So after the field changes, its own region is drawn and written straight away: only its lines, from
the compositor's current map. Nothing else on the screen is touched, and the next frame draws everything
else as usual (the field's region is already clean by then, so it is not drawn twice).

Text widgets take this in with :class:`EchoesAtOnce`: the prompt, and the search bar (typing a search while
a reply streams is the same case).

This uses Textual internals (the screen's compositor, the app's batch count and ``_display``). Should they
change shape, the fast path turns itself off for the session and keys go the normal way.
"""

from __future__ import annotations

from typing import Any, cast

from textual.widget import Widget

_disabled = False


def paint_now(widget: Widget) -> bool:
    """Draw ``widget``'s changed lines to the terminal now; False when it must wait for the next frame.

    It waits when the widget is not on the current screen, has never been laid out, or waits for a new
    layout (it grew, say): its region from the last frame would then be wrong.
    """
    global _disabled
    if _disabled or not widget.is_attached:
        return False
    app = widget.app
    try:
        screen = widget.screen
        compositor: Any = screen._compositor
        if screen is not app.screen or widget not in compositor.visible_widgets or _layout_pending(widget):
            return False
        compositor.update_widgets({widget})
        update = compositor.render_update(screen_stack=app._background_screens)
        # A batch held open by a streaming reply's mounts is about the transcript; the field's own lines
        # do not depend on it. _display is synchronous, so nothing else sees the count at zero.
        held, app._batch_count = app._batch_count, 0
        try:
            app._display(screen, update)
        finally:
            app._batch_count = held
    except AttributeError:
        _disabled = True  # a Textual without these internals: frames alone draw the field
        return False
    return True


def _layout_pending(widget: Widget) -> bool:
    """True when the widget sizes to its content and asked for a layout the screen has not done yet: it may
    grow or shrink. (An Input of fixed size asks for one on every change; its region stays right.)"""
    if not widget.styles.auto_dimensions:
        return False
    pending: dict[Widget, set[Widget]] = widget.screen._layout_widgets  # widgets waiting, by ancestor
    return widget._layout_required or any(widget in waiting for waiting in pending.values())


class EchoesAtOnce:
    """Mixin for a text widget whose changes are drawn at once: its change watchers call :meth:`echo_soon`.

    A plain class, listed first among the bases: Textual follows a widget's first DOM base for CSS and
    component classes, which must stay the Textual widget's.
    """

    _echo_due = False  # a class default: a TextArea's __init__ already edits and moves the cursor

    def echo_soon(self) -> None:
        widget = cast(Widget, self)
        # Before the widget runs, a scheduled echo could be dropped and leave the flag set for good; there is
        # nothing on screen to draw then anyway.
        if not self._echo_due and widget.is_mounted:
            self._echo_due = True
            # After the key's handler: the text, cursor and scroll are all settled by then.
            widget.call_next(self._echo)

    def _echo(self) -> None:
        self._echo_due = False
        paint_now(cast(Widget, self))
