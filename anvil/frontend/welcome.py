"""What an interactive front end says when a new session opens and when the person leaves, in the same words in
the TUI and ``--plain``.

The welcome line names the model in use, whether a key for it was found (by the variable's name, never its
value), and the two commands a newcomer needs: ``/model`` and ``/help``. The farewell says how to come back.
Imports nothing of the engine: the app shows the welcome line before litellm is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from anvil import DEFAULT_MODEL

#: The variable that holds each provider's key, as litellm reads it (its prefix in the model string). A
#: provider not listed here is checked when the model loads, and a missing key is said then.
KEY_VARIABLES: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY", "xai": "XAI_API_KEY", "cohere": "COHERE_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY", "perplexity": "PERPLEXITYAI_API_KEY",
}
#: a key sent to whichever provider the model uses (anvil's own variable)
ANVIL_KEY = "ANVIL_API_KEY"


def key_text(model: str, api_base: str | None, environ: Mapping[str, str] | None = None) -> str:
    """Whether a key for ``model`` was found, naming the variable and never its value."""
    env = os.environ if environ is None else environ
    if model == "scripted" or model.startswith("scripted:"):
        return "no key needed (a scripted model)"
    if env.get(ANVIL_KEY):
        return f"key: {ANVIL_KEY} is set"
    variable = KEY_VARIABLES.get(model.split("/", 1)[0]) if "/" in model else None
    if variable is not None and env.get(variable):
        return f"key: {variable} is set"
    if api_base:
        return f"no key set, none needed for a local server ({api_base})"
    if variable is None:
        return "its key is checked when the model loads"
    return f"key: {variable} is not set"


def welcome_text(model: str, api_base: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The first line of a new session: the model, its key, /model and /help."""
    default = " (the default)" if model == DEFAULT_MODEL else ""
    return (f"Model: {model}{default} · {key_text(model, api_base, environ)} · /model NAME switches models · "
            "/help lists commands and keys")


def farewell_text(session_id: str, turns: int) -> str | None:
    """How to resume the session that just closed; None when it had no turn (it was never saved)."""
    if not turns:
        return None
    return (f"Session {session_id} is saved. Resume it with `anvil -c` (the newest here) or "
            f"`anvil --resume {session_id}`.")
