#!/usr/bin/env python3
"""pre_tool_use hook: refuse edits and writes to files that usually hold secrets.

Exits 2 with the reason on stderr (anvil gives it to the model, which then leaves the file alone);
exits 0 for everything else. Reads the event from stdin; the standard library only.
"""

from __future__ import annotations

import json
import sys
from fnmatch import fnmatch
from pathlib import PurePath

# File names (globs, matched case-insensitively against the last part of the path) that hold secrets.
SECRET_NAMES = [
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.ppk", ".netrc", ".pgpass", ".npmrc", ".pypirc",
    "credentials", "credentials.json", "secrets.json", "secrets.y*ml", "secrets.toml", "secrets.ini", "*.secret",
    "*.secrets", "service-account*.json",
]
# Templates that only list the variable names are meant to be edited.
ALLOWED_NAMES = [".env.example", ".env.sample", ".env.template", ".env.dist", "*.example", "*.pub"]
# Directories whose every file is secret.
SECRET_DIRS = {".ssh", ".gnupg", ".aws"}
PATH_KEYS = ("path", "file_path")


def is_secret(path: str) -> bool:
    parts = PurePath(path.replace("\\", "/")).parts
    if not parts:
        return False
    name = parts[-1].lower()
    if any(fnmatch(name, pattern) for pattern in ALLOWED_NAMES):
        return False
    return any(fnmatch(name, pattern) for pattern in SECRET_NAMES) or bool(SECRET_DIRS & set(parts[:-1]))


def main() -> int:
    try:
        event = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        print(f"block_secrets: the event on stdin is not JSON ({exc}); nothing was checked.", file=sys.stderr)
        return 1  # a failure anvil reports, not a block
    tool_input = event.get("tool_input") or {}
    for key in PATH_KEYS:
        path = tool_input.get(key)
        if isinstance(path, str) and is_secret(path):
            print(f"Refused by the block_secrets hook: {path} looks like a secrets file (keys, tokens, passwords). "
                  "Do not edit it; tell the person which value to change and let them do it.", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
