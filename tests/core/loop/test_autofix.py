"""Self-correcting final verification: the automatic fixers run on the changed files before failed checks go back
to the model, and the result says what they changed and what the model had to fix."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import Notice
from anvil.core.job_events import AutofixApplied
from anvil.core.loop.autofix import DEFAULT_FIXERS, fixer_argv, plan_fixes, run_fixers
from anvil.core.tools import default_tools
from anvil.runtime import fixers
from tests.support.agents import ended, make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer

UNUSED_IMPORT = "import os\nimport sys\n\ndef double(x):\n    return x*2\n"


@pytest.fixture(autouse=True)
def ruff_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixers are found on PATH, as the person's shell would find them: here, this venv's ruff."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert shutil.which("ruff"), "the dev environment installs ruff"


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def agent_with_tools(server: ScriptedOpenAIServer, tmp_path: Path, **kwargs: Any) -> Any:
    agent = make_agent(server, tmp_path, interactive=False, verify=["ruff check ."], **kwargs)
    agent.tools = default_tools()
    agent.caller.tools = agent.tools
    return agent


async def test_a_lint_error_is_fixed_by_ruff_without_a_model_call(server: ScriptedOpenAIServer,
                                                                   tmp_path: Path) -> None:
    server.add(write("util.py", UNUSED_IMPORT), {"text": "Done."}, {"text": "a third call would be a model fix"})
    agent = agent_with_tools(server, tmp_path, autofix=DEFAULT_FIXERS)
    events = await run(agent, "add double()")
    assert len(server.requests) == 2  # the fixers did it: the model was not asked again
    assert (tmp_path / "util.py").read_text() == "def double(x):\n    return x * 2\n"
    applied = [e for e in events if isinstance(e, AutofixApplied)]
    assert len(applied) == 1 and applied[0].files == ("util.py",)
    assert applied[0].commands == ("ruff check --fix --quiet util.py", "ruff format --quiet util.py")
    assert "-import os\n" in applied[0].diff and "+    return x * 2\n" in applied[0].diff
    end = ended(events)
    assert end.reason == "done"
    assert end.message == "Verification passed: `ruff check .`. The automatic fixers changed util.py."
    record = agent.verification.to_dict()
    assert record["passed"] and record["autofix"]["files"] == ["util.py"] and record["model_fixed"] == []
    assert record["autofix"]["diff"] == applied[0].diff


async def test_without_autofix_the_model_has_to_fix_it(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(write("util.py", UNUSED_IMPORT), {"text": "Done."},
               {"tool_calls": [{"name": "read_file", "arguments": {"path": "util.py"}}]},
               write("util.py", "def double(x):\n    return x * 2\n"), {"text": "Fixed the lint."})
    agent = agent_with_tools(server, tmp_path, autofix=None)
    events = await run(agent, "add double()")
    assert len(server.requests) == 5
    assert "F401" in server.requests[2]["messages"][-1]["content"]  # the failure went back to the model
    assert not any(isinstance(e, AutofixApplied) for e in events)
    record = agent.verification.to_dict()
    assert record["passed"] and record["autofix"]["files"] == []
    assert len(record["model_fixed"]) == 1 and record["model_fixed"][0].startswith("`ruff check .` failed (exit 1)")
    assert ended(events).message == ("Verification passed: `ruff check .`. The model fixed the failures handed back "
                                     "to it.")


async def test_what_the_fixers_cannot_fix_goes_to_the_model_which_rereads_the_files(server: ScriptedOpenAIServer,
                                                                                     tmp_path: Path) -> None:
    broken = "import os\n\ndef double(x):\n    return y*2\n"  # F401 is fixable, F821 (undefined y) is not
    server.add(write("util.py", broken), {"text": "Done."}, {"text": "Giving up."})
    agent = agent_with_tools(server, tmp_path, autofix=DEFAULT_FIXERS, verify_retries=1)
    events = await run(agent, "add double()")
    feedback = server.requests[2]["messages"][-1]["content"]
    assert "F821" in feedback and "F401" not in feedback  # only what is left
    assert "anvil's automatic fixers changed util.py since you wrote them: read them again" in feedback
    end = ended(events)
    assert end.message.startswith("Verification still failing: `ruff check .` failed (exit 1)")
    assert "The automatic fixers changed util.py." in end.message


async def test_a_fixer_that_is_not_installed_is_skipped_quietly(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(write("util.py", UNUSED_IMPORT), {"text": "Done."}, {"text": "Not fixing."})
    agent = agent_with_tools(server, tmp_path, autofix={"python": ("no-such-fixer-anvil {paths}",)}, verify_retries=1)
    events = await run(agent, "add double()")
    assert not any(isinstance(e, AutofixApplied) for e in events)
    assert not any(isinstance(e, Notice) and "fixer" in e.message.lower() for e in events)
    assert len(server.requests) == 3 and "F401" in server.requests[2]["messages"][-1]["content"]


async def test_fixers_record_checkpoints_and_touch_only_the_changed_files(tmp_path: Path) -> None:
    recorded: list[tuple[Path, bytes | None]] = []

    class Recorder:
        def record(self, path: Path, original: bytes | None) -> None:
            recorded.append((path, original))

    (tmp_path / "a.py").write_text(UNUSED_IMPORT)
    (tmp_path / "untouched.py").write_text(UNUSED_IMPORT)
    (tmp_path / "notes.md").write_text("# notes\n")
    outcome = await run_fixers([tmp_path / "a.py", tmp_path / "notes.md"], tmp_path, DEFAULT_FIXERS,
                               checkpoints=Recorder())  # type: ignore[arg-type]
    assert outcome.files == ("a.py",) and outcome.problems == ()
    assert recorded == [(tmp_path / "a.py", UNUSED_IMPORT.encode())]
    assert (tmp_path / "untouched.py").read_text() == UNUSED_IMPORT


def test_fixers_are_planned_per_language_and_extension() -> None:
    table = {"python": ("fix-py {paths}",), ".pyi": ("fix-stub",), "md": ("fix-md {paths} --quiet",)}
    plan = plan_fixes([Path("b.py"), Path("a.py"), Path("t.pyi"), Path("r.md"), Path("x.txt")], table)
    assert plan == [("fix-py {paths}", [Path("a.py"), Path("b.py")]), ("fix-md {paths} --quiet", [Path("r.md")]),
                    ("fix-stub", [Path("t.pyi")])]
    assert fixer_argv("fix-md {paths} --quiet", ["r.md", "s.md"]) == ["fix-md", "r.md", "s.md", "--quiet"]
    assert fixer_argv("fix-stub", ["t.pyi"]) == ["fix-stub", "t.pyi"]


def test_the_autofix_setting() -> None:
    assert fixers(False) is None
    assert fixers(True) == DEFAULT_FIXERS
    assert fixers({"python": []}) == {}  # an empty list turns a language's fixers off
    assert fixers({"js": ["prettier --write {paths}"]}) == {**DEFAULT_FIXERS, "js": ("prettier --write {paths}",)}


def test_the_settings_validate_autofix(tmp_path: Path) -> None:
    from anvil.config import ConfigError, load_settings

    (tmp_path / ".anvil").mkdir()
    (tmp_path / ".anvil" / "config.toml").write_text('autofix = "sometimes"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, trust=True)
    message = str(caught.value)
    assert "'autofix' should be true, false or a table of fixer commands" in message and "'sometimes'" in message
    (tmp_path / ".anvil" / "config.toml").write_text("autofix = false\n")  # harmless: needs no trust
    assert load_settings(tmp_path, trust=False).autofix is False
    (tmp_path / ".anvil" / "config.toml").unlink()
    assert load_settings(tmp_path, environ={"ANVIL_AUTOFIX": "false"}).autofix is False


def test_a_project_s_fixer_commands_need_trust(tmp_path: Path) -> None:
    from anvil.config import load_settings

    (tmp_path / ".anvil").mkdir()
    (tmp_path / ".anvil" / "config.toml").write_text('[autofix]\npython = ["evil {paths}"]\n')
    assert load_settings(tmp_path, trust=False).autofix is True  # ignored: it would run a command
    assert load_settings(tmp_path, trust=True).autofix == {"python": ["evil {paths}"]}

