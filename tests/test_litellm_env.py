"""litellm must not read a .env file into anvil's environment.

In its default mode litellm loads the nearest .env when imported (from the working directory when the
program has no main file, else from above its own install: a venv inside the person's repository finds
the project's .env). The project's secrets would then be anvil's environment, and its commands'.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = "ANVIL_DOTENV_PROBE"


def test_importing_litellm_through_anvil_leaves_a_dotenv_alone(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"{PROBE}=leaked\n")
    env = {k: v for k, v in os.environ.items() if k not in (PROBE, "LITELLM_MODE")}
    code = ("import os; from anvil.core.model.litellm_model import load_litellm; load_litellm(); "
            f"print(os.environ.get({PROBE!r}, 'absent'))")
    # `python -c` has no main file, so dotenv would search from the working directory: the .env above.
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "absent"
