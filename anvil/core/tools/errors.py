"""The one exception tools raise: a failure told to the model, which it can act on."""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should read and can act on (bad path, no match, timeout...)."""
