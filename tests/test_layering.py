"""The core and headless front end never load a UI library, and litellm only when a model is called."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["textual", "prompt_toolkit", "litellm"]


def loaded_after(code: str) -> dict[str, bool]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_core_and_headless_import_nothing_heavy() -> None:
    loaded = loaded_after("import anvil.core, anvil.core.loop.agent, anvil.core.model.litellm_model, anvil.core.tools, "
                          "anvil.headless, anvil.runtime, anvil.config, anvil.cli")
    assert loaded == dict.fromkeys(HEAVY, False)


def test_building_a_runtime_does_not_import_litellm(tmp_path) -> None:
    code = (f"import os; os.environ['XDG_DATA_HOME']={str(tmp_path)!r}\n"
            "from pathlib import Path\nfrom anvil.config import Settings\nfrom anvil.runtime import open_runtime\n"
            f"open_runtime(Settings(model='openai/x', api_base='http://127.0.0.1:9'), Path({str(tmp_path)!r}))")
    assert loaded_after(code)["litellm"] is False


def test_core_sources_do_not_import_ui_libraries() -> None:
    from pathlib import Path

    import anvil.core

    root = Path(anvil.core.__file__).parent
    for path in root.rglob("*.py"):
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                assert not any(stripped.split()[1].startswith(lib) for lib in ("textual", "prompt_toolkit")), path
                if not line.startswith((" ", "\t")):
                    assert not stripped.split()[1].startswith("litellm"), f"top-level litellm import in {path}"
