"""Layered settings and their error messages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from anvil.config import ConfigError, load_settings, permission_files, permission_rules, user_config_path
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.verdict import Verdict
from anvil.runtime import open_runtime
from tests.conftest import anvil_command


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults(project: Path) -> None:
    settings = load_settings(project, environ={})
    assert settings.max_iterations == 50 and settings.auto_approve is False


def test_layers_in_order(project: Path) -> None:
    write(user_config_path(), 'model = "openai/user"\nmax_iterations = 10\ntheme = "light"\n'
                              '[permissions]\nallow = ["git status"]\n')
    write(project / ".anvil" / "config.toml", 'model = "openai/project"\nmax_iterations = 20\n'
                                              '[permissions]\ndeny = ["rm *"]\n')
    settings = load_settings(project, environ={"ANVIL_MAX_ITERATIONS": "30"})
    assert settings.model == "openai/project"  # project beats user
    assert settings.theme == "light"  # user beats defaults
    assert settings.max_iterations == 30  # env beats files
    # permissions are not layered: each file's table stays in its scope
    assert settings.permissions.user.allow == ["git status"] and settings.permissions.user.deny == []
    assert settings.permissions.project.deny == ["rm *"] and settings.permissions.project.allow == []
    flagged = load_settings(project, {"max_iterations": 40, "model": None}, environ={"ANVIL_MAX_ITERATIONS": "30"})
    assert flagged.max_iterations == 40 and flagged.model == "openai/project"


def test_env_bool(project: Path) -> None:
    assert load_settings(project, environ={"ANVIL_AUTO_APPROVE": "true"}).auto_approve is True


def test_unknown_key_names_file_and_key(project: Path) -> None:
    path = project / ".anvil" / "config.toml"
    write(path, "max_iteration = 5\n")
    with pytest.raises(ConfigError) as info:
        load_settings(project, environ={})
    message = str(info.value)
    assert str(path) in message and "'max_iteration'" in message and "max_iterations" in message


def test_wrong_type_says_what_was_expected(project: Path) -> None:
    write(user_config_path(), 'max_iterations = "lots"\n')
    with pytest.raises(ConfigError, match=r"'max_iterations' should be a whole number, not 'lots'"):
        load_settings(project, environ={})


def test_nested_unknown_key(project: Path) -> None:
    write(project / ".anvil" / "config.toml", "[permissions]\nallwo = []\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'permissions.allwo'.*allow, deny"):
        load_settings(project, environ={})


def test_toml_syntax_error(project: Path) -> None:
    write(project / ".anvil" / "config.toml", "model = \n")
    with pytest.raises(ConfigError, match=r"is not valid TOML.*line 1"):
        load_settings(project, environ={})


def test_bad_env_value_names_the_environment(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"Environment.*'max_iterations'"):
        load_settings(project, environ={"ANVIL_MAX_ITERATIONS": "many"})


def test_cli_reports_config_error_without_traceback(project: Path) -> None:
    write(project / ".anvil" / "config.toml", "[[[broken\n")
    result = subprocess.run(anvil_command("-p", "hi", "--model", "scripted"), cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("anvil: Config file") and "not valid TOML" in result.stderr
    assert str(project / ".anvil" / "config.toml") in result.stderr and result.stderr.count("\n") == 1
    assert (project / ".anvil" / "config.toml").read_text() == "[[[broken\n"  # nothing the user wrote is lost


# -- permission rules: every file applies, each in its own scope -------------------------------------------


def test_permissions_from_every_file_apply_in_their_scopes(project: Path) -> None:
    write(user_config_path(), '[permissions]\nallow = ["echo from-user-config *"]\n')
    write(project / ".anvil" / "config.toml", '[permissions]\nallow = ["echo from-project-config *"]\n')
    write(user_config_path().parent / "permissions.toml", 'allow = ["echo from-user-saved *"]\n'
                                                          'deny = ["echo refused-by-user *"]\n')
    write(project / ".anvil" / "permissions.toml", 'allow = ["echo from-project-saved *"]\n')
    settings = load_settings(project, environ={}, trust=True)  # the project's allow rules need trust
    assert permission_rules(settings, project) == {
        "user": (["echo from-user-config *", "echo from-user-saved *"], ["echo refused-by-user *"]),
        "project": (["echo from-project-config *", "echo from-project-saved *"], []),
    }
    runtime = open_runtime(settings, project, model=ScriptedModel([]))
    try:
        agent = runtime.agent
        tool = agent.tools.get("run_command")
        assert tool is not None

        def verdict(command: str) -> Verdict:
            args = agent.tools.prepare("run_command", json.dumps({"command": command})).args
            return agent.policy.evaluate(tool, args, agent.ctx)

        for source in ("user-config", "project-config", "user-saved", "project-saved"):
            allowed = verdict(f"echo from-{source} x")
            assert (allowed.action, allowed.by) == ("allow", f"echo from-{source} *")
        refused = verdict("echo refused-by-user now")
        assert refused.action == "deny" and "(user scope)" in refused.message
        assert verdict("echo unknown").action == "ask"
        assert agent.policy.files == permission_files(project)  # "always allow" saves where the rules are read
    finally:
        runtime.session.close()


@pytest.mark.parametrize("where", ["user config", "project config", "user saved", "project saved"])
def test_a_bad_rule_is_one_config_error_naming_its_file(project: Path, where: str) -> None:
    scope, kind = where.split()
    folder = user_config_path().parent if scope == "user" else project / ".anvil"
    path = folder / ("config.toml" if kind == "config" else "permissions.toml")
    write(path, ('[permissions]\n' if kind == "config" else "") + 'allow = ["git status", "*"]\n')
    settings = load_settings(project, environ={}, trust=True)
    with pytest.raises(ConfigError) as info:
        permission_rules(settings, project)
    message = str(info.value)
    assert message.startswith(f"{path}: Permission rule '*'") and "use auto-approve" in message
    assert "\n" not in message


def test_a_rules_file_with_a_wrong_type_is_one_config_error(project: Path) -> None:
    path = project / ".anvil" / "permissions.toml"
    write(path, 'deny = "rm *"\n')
    with pytest.raises(ConfigError, match=r"permissions\.toml: 'deny' should be a list of strings.*not 'rm \*'"):
        permission_rules(load_settings(project, environ={}), project)


def test_a_permissions_table_of_the_wrong_type_names_it_as_written(project: Path) -> None:
    write(user_config_path(), 'permissions = ["git status"]\n')
    with pytest.raises(ConfigError, match=r"User config .*: 'permissions' should be a table, not \['git status'\]"):
        load_settings(project, environ={})
