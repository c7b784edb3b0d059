"""Empty stand-ins for protected paths that do not exist yet (``.git`` in a project without one, ``.anvil``).

A mount needs something to mount on: a command must not be able to create ``.git/hooks/pre-commit`` or
``.anvil/config.toml``, so an empty directory (or file) is made where they would be and mounted read-only.
Git skips an empty ``.git`` (it looks further up) and anvil reads nothing from an empty ``.anvil``, so they
stay for the session and are removed when it ends, if still empty. A missing ``.git/commondir`` gets a file
pointing at its own directory (``.``), the one content git accepts that changes nothing (an empty one stops
git); it is removed when it still says just that.

Several anvil sessions may share a project. Each holds a shared lock on the project's lock file (in anvil's
data dir) while it lives; the one that ends last (the only one that gets the lock exclusively) removes every
placeholder in the ledger beside the lock file, including those a crashed session left behind. Removing a
placeholder under a running sandbox would take its protection with it, which the lock prevents.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import IO

from anvil.core.private_files import open_private, private_dir, replace_private
from anvil.core.sandbox.git_places import POINTER_TO_ITSELF, PlaceKind


class Placeholders:
    def __init__(self, state_dir: Path, root: Path) -> None:
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
        self.lock_path = state_dir / f"{digest}.lock"
        self.ledger_path = state_dir / f"{digest}.json"
        self._lock: IO[bytes] | None = None

    def hold(self) -> None:
        """Take the shared lock (once): this session's sandboxes stand on the placeholders from now on."""
        if self._lock is not None:
            return
        try:
            private_dir(self.lock_path.parent)  # under anvil's data dir: private like the rest of it
            self._lock = os.fdopen(open_private(self.lock_path, os.O_WRONLY | os.O_APPEND), "ab")
            fcntl.flock(self._lock, fcntl.LOCK_SH)
        except OSError:
            self._lock = None

    def make(self, wanted: list[tuple[Path, PlaceKind]]) -> None:
        made: list[Path] = []
        for path, kind in wanted:
            try:
                if kind == "dir":
                    path.mkdir(parents=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with path.open("x", encoding="utf-8") as f:
                        f.write(POINTER_TO_ITSELF if kind == "pointer" else "")
            except OSError:
                continue  # it appeared meanwhile (then it is real), or bubblewrap will say why it cannot mount
            made.append(path)
        if made:
            self._save(self._ledger() | set(made))

    def close(self) -> None:
        """The session ends: remove what is still empty, unless another session still runs here."""
        if self._lock is None:
            return
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._release()
            return
        ledger = self._ledger()
        for path in list(ledger):
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only when empty: anything in it is someone's own now
                elif path.is_file() and path.read_bytes() in (b"", POINTER_TO_ITSELF.encode()):
                    path.unlink()
            if not path.exists():
                ledger.discard(path)
        self._save(ledger)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _ledger(self) -> set[Path]:
        try:
            return {Path(p) for p in json.loads(self.ledger_path.read_text())}
        except (OSError, ValueError, TypeError):
            return set()

    def _save(self, ledger: set[Path]) -> None:
        with contextlib.suppress(OSError):
            replace_private(self.ledger_path, json.dumps(sorted(map(str, ledger))).encode())
