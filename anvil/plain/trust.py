"""`anvil --plain` asks the trust question (anvil.frontend.trust) as a prompt, before the session starts.

A line answer rather than a single key: nothing is running yet, and a key typed ahead must not trust a folder.
Enter alone, ``n`` or Ctrl+D is "not this time"; Ctrl+C quits anvil.
"""

from __future__ import annotations

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.shortcuts import print_formatted_text

from anvil.frontend.trust import TrustQuestion
from anvil.plain.render import STYLE

YES = {"t", "trust", "y", "yes"}
NO = {"", "n", "no", "not", "don't trust"}


async def ask_trust(question: TrustQuestion, *, input: Input | None = None, output: Output | None = None) -> bool:
    """True when the person trusts the folder. KeyboardInterrupt (Ctrl+C) is left to the caller: it quits."""
    text = FormattedText([
        ("class:title", f"{question.title}\n"), ("", f"{question.intro}\n"),
        *[("class:pattern", f"  • {item}\n") for item in question.items],
        ("class:dim", f"{question.advice}\n"),
    ])
    print_formatted_text(text, style=STYLE, output=output)
    session = PromptSession[str](input=input, output=output, style=STYLE)
    while True:
        try:
            answer = await session.prompt_async([("class:key", f"{question.hint}: ")])
        except EOFError:
            return False
        answer = answer.strip().lower()
        if answer in YES or answer in NO:
            return answer in YES
        print_formatted_text(FormattedText([("class:notice", "Type t to trust this folder, or n (or Enter) "
                                             "not to, this time.")]), style=STYLE, output=output)
