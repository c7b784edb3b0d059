"""The core never imports upwards (settings, runtime, front ends, UI libraries), and litellm only lazily, in model/."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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


#: What the core never imports, at any level (inside functions and under TYPE_CHECKING too): the settings
#: layer, the runtime, the CLI, every front end and the UI libraries. Settings reach the core as plain values.
CORE_NEVER_IMPORTS = ("anvil.config", "anvil.runtime", "anvil.cli", "anvil.headless", "anvil.tui", "anvil.plain",
                      "anvil.frontend", "anvil.acp", "textual", "prompt_toolkit")
CORE = Path(__file__).resolve().parent.parent / "anvil" / "core"


@dataclass(frozen=True)
class Import:
    text: str  # the statement, for messages
    modules: tuple[str, ...]  # absolute; ``from a import b`` gives ``a`` and ``a.b`` (b may be a submodule)
    line: int
    at_import_time: bool  # runs when the module is imported: not inside a function nor under TYPE_CHECKING

    def reaches(self, packages: tuple[str, ...]) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.modules for p in packages)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statement(node: ast.Import | ast.ImportFrom, package: str, at_import_time: bool) -> Import:
    if isinstance(node, ast.Import):
        modules = tuple(alias.name for alias in node.names)
    else:
        base = node.module or ""
        if node.level:
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}" if base else anchor
        modules = (base, *(f"{base}.{alias.name}" for alias in node.names))
    return Import(ast.unparse(node), modules, node.lineno, at_import_time)


def imports_in(source: str, package: str) -> list[Import]:
    """Every import statement in a module of ``package``, wherever it is, relative ones made absolute."""
    found: list[Import] = []

    def visit(nodes: list[ast.stmt] | list[ast.AST], at_import_time: bool) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(_statement(node, package, at_import_time))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(list(ast.iter_child_nodes(node)), False)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.body, False)
                visit(node.orelse, at_import_time)
            else:
                visit(list(ast.iter_child_nodes(node)), at_import_time)

    visit(ast.parse(source).body, True)
    return found


def core_imports() -> list[tuple[str, Import]]:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE.parent.parent)
        parts = rel.with_suffix("").parts
        package = ".".join(parts if path.name == "__init__.py" else parts[:-1])
        found += [(str(rel), imp) for imp in imports_in(path.read_text(encoding="utf-8"), package)]
    return found


def test_the_core_never_imports_settings_front_ends_or_ui_libraries() -> None:
    offending = [f"{where}:{imp.line}: {imp.text}" for where, imp in core_imports() if imp.reaches(CORE_NEVER_IMPORTS)]
    assert not offending, "the core imports upwards:\n" + "\n".join(offending)


def test_litellm_is_imported_only_lazily_and_only_by_the_model_package() -> None:
    offending = [f"{where}:{imp.line}: {imp.text}" for where, imp in core_imports() if imp.reaches(("litellm",))
                 and (imp.at_import_time or not where.startswith("anvil/core/model/"))]
    assert not offending, "litellm imported at module level or outside core/model:\n" + "\n".join(offending)


def test_the_import_scan_sees_every_form_of_import() -> None:
    """The scans above must not miss an import hidden in a function, under TYPE_CHECKING or written relative."""
    source = ("from typing import TYPE_CHECKING\nimport litellm\nif TYPE_CHECKING:\n    from anvil.tui.app import App\n"
              "else:\n    import json\n"
              "def f():\n    from anvil import config\n    from ...plain import repl\n    import textual.widgets\n"
              "class C:\n    async def g(self):\n        from . import sibling\n")
    seen = {(m, imp.line, imp.at_import_time) for imp in imports_in(source, "anvil.core.demo") for m in imp.modules}
    assert {("litellm", 2, True), ("anvil.tui.app", 4, False), ("json", 6, True), ("anvil.config", 8, False),
            ("anvil.plain.repl", 9, False), ("textual.widgets", 10, False),
            ("anvil.core.demo.sibling", 13, False)} <= seen
