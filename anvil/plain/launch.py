"""`anvil --plain` from the command line: the trust question when the folder needs one, the settings, the
runtime, then the REPL (anvil/plain/repl.py) on the real terminal."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anvil.frontend.jobs import JobLaunch


def launch(flags: dict[str, Any], *, resume: str | None = None, continue_latest: bool = False,
           trust: bool | None = None, job: JobLaunch | None = None, first_prompt: str | None = None) -> int:
    """The `anvil --plain` entry used by cli.py: the trust question if the folder needs one, settings, runtime,
    then the REPL on the real terminal."""
    from anvil.config import ConfigError, load_settings, project_trust
    from anvil.core.model.errors import ModelError
    from anvil.core.session.store import SessionError
    from anvil.core.workflows.base import JobError
    from anvil.plain.repl import run_plain
    from anvil.project import find_project_root
    from anvil.runtime import open_runtime

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("anvil: --plain needs a terminal; use `anvil -p PROMPT` in scripts and pipes.", file=sys.stderr)
        return 2
    root = find_project_root(Path.cwd())
    try:
        if trust is None:
            check = project_trust(root)
            if not check.trusted:
                from anvil.frontend.trust import decide, trust_question
                from anvil.plain.trust import ask_trust

                trust = decide(check, asyncio.run(ask_trust(trust_question(check))))
        settings = load_settings(root, flags, trust=trust)
        runtime = open_runtime(settings, root, resume=resume, continue_latest=continue_latest,
                               resume_job=(job.workflow, job.resume) if job is not None and job.resume else None)
        from prompt_toolkit.patch_stdout import patch_stdout

        # Anything else printing to stdout (litellm's own messages) goes above the prompt, not through it.
        with patch_stdout(raw=True):
            return asyncio.run(run_plain(runtime, job=job, first_prompt=first_prompt))
    except (ConfigError, SessionError, ModelError, JobError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
