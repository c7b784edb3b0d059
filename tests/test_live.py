"""Against a real provider: run only with a key (skipped otherwise, see conftest)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import LIVE_KEYS, anvil_command


@pytest.mark.live
def test_real_provider_answers(project: Path) -> None:
    if LIVE_KEYS["ANTHROPIC_API_KEY"]:
        model, env = "anthropic/claude-haiku-4-5", {"ANTHROPIC_API_KEY": LIVE_KEYS["ANTHROPIC_API_KEY"]}
    else:
        model, env = "openai/gpt-4o-mini", {"OPENAI_API_KEY": str(LIVE_KEYS["OPENAI_API_KEY"])}
    result = subprocess.run(anvil_command("-p", "Reply with the single word pong and nothing else.", "--model", model,
                                          "--output-format", "json"),
                            cwd=project, capture_output=True, text=True, timeout=180, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    assert "pong" in result.stdout.lower()
