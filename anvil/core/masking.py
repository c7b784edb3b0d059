"""Masking known secret values in what anvil writes: session files, command logs, stream-json.

A command that prints ``$OPENAI_API_KEY`` (``env``, ``printenv``, a debug log) must not leave the key in a
file under the data directory or in a CI log. The runtime collects the values it knows are secret (the
provider keys anvil was given, environment variables named like a secret) and hands them to a
:class:`SecretMasker`; the writers replace each occurrence with ``[masked NAME]``. What the model reads is
left alone unless the person asks for that too (``mask_secrets_for_model``): the model asked to see the
output, and it may need to tell that a variable is set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: environment variable names whose values are treated as secrets: *_KEY, *_TOKEN, *_SECRET, *PASSWORD*
SECRET_NAME = re.compile(r"(?:_KEY|_TOKEN|_SECRET)$|PASSWORD", re.IGNORECASE)
#: shorter values are left alone: masking "1" or "true" everywhere would mangle ordinary output
MIN_SECRET_CHARS = 8


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def secrets_from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``{name: value}`` of the environment variables named like secrets, with values long enough to mask."""
    return {name: value for name, value in environ.items()
            if is_secret_name(name) and len(value.strip()) >= MIN_SECRET_CHARS}


class SecretMasker:
    """Replaces every known secret value in a text with ``[masked NAME]``."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self._names: dict[str, str] = {}
        for name, value in (secrets or {}).items():
            self.add(name, value)
        self._pattern: re.Pattern[str] | None = None

    def add(self, name: str, value: str | None) -> None:
        """Know one more secret (too short a value is ignored). Its JSON-escaped form is masked too, so a line
        of JSON that holds it is masked as well as the raw text."""
        value = (value or "").strip()
        if len(value) < MIN_SECRET_CHARS:
            return
        for form in (value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]):
            self._names.setdefault(form, name)
        self._pattern = None

    def extend(self, secrets: Iterable[tuple[str, str | None]]) -> None:
        for name, value in secrets:
            self.add(name, value)

    def __bool__(self) -> bool:
        return bool(self._names)

    @property
    def names(self) -> list[str]:
        """The names of the secrets masked (never their values), for saying what is masked."""
        return sorted(set(self._names.values()))

    def mask(self, text: str) -> str:
        if not self._names or not text:
            return text
        if self._pattern is None:  # longest first, so a secret that contains another is masked whole
            forms = sorted(self._names, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(form) for form in forms))
        return self._pattern.sub(lambda match: f"[masked {self._names[match.group(0)]}]", text)

    def mask_json(self, line: str) -> str:
        """A line of JSON with the secrets masked inside its strings. The text is only scanned (the common case:
        no secret in it); a line that holds one is decoded and masked string by string, so a secret that looks
        like JSON syntax can never change the line's structure."""
        if self.mask(line) == line:
            return line
        return json.dumps(self._mask_values(json.loads(line)), ensure_ascii=False)

    def _mask_values(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, list):
            return [self._mask_values(item) for item in value]
        if isinstance(value, dict):
            return {self.mask(str(key)): self._mask_values(item) for key, item in value.items()}
        return value
