"""Write the scripted "models" for examples/tasks: solver/ solves every task, sloppy/ fails some.

Each script is what `--model scripted:FILE` replays, one model reply a turn (see anvil/core/model/scripted.py);
`anvil eval examples/tasks --model scripted:examples/scripted/solver` runs `solver/<task>.json` for each task.
Every reply carries a made-up price and token usage, so the eval's cost figures and charts have something to
show: the solver is the dearer, careful model, the sloppy one the cheap, careless one.

Run it from anywhere after changing a task: python examples/scripted/make_scripts.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def priced(turns: list[dict[str, Any]], cost: float) -> list[dict[str, Any]]:
    """Each reply with a price and usage that grows with the conversation (most of it read from the cache)."""
    out = []
    for n, turn in enumerate(turns):
        prompt = 2400 + 900 * n
        out.append({**turn, "cost": cost, "usage": {"prompt_tokens": prompt, "completion_tokens": 180 + 40 * n,
                                                    "cache_read_tokens": int(prompt * 0.8) if n else 0}})
    return out


PYTEST = call("run_command", command="python -m pytest -q")

TRACKER = '''"""A command-line task tracker: add, list and complete tasks, stored in SQLite."""

import argparse
import os
import sqlite3
import sys

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tasks "
    "(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0)"
)


def connect(path=None):
    db = sqlite3.connect(path or os.environ.get("TRACKER_DB", "tasks.db"))
    db.execute(SCHEMA)
    return db


def add(db, title):
    cursor = db.execute("INSERT INTO tasks (title) VALUES (?)", (title,))
    db.commit()
    return cursor.lastrowid


def tasks(db):
    return db.execute("SELECT id, title, done FROM tasks ORDER BY id").fetchall()


def complete(db, task_id):
    cursor = db.execute("UPDATE tasks SET done = 1 WHERE id = ?", (task_id,))
    db.commit()
    return cursor.rowcount == 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tracker", description="Keep a list of tasks.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("add", help="add a task").add_argument("title")
    commands.add_parser("list", help="list the tasks")
    commands.add_parser("complete", help="mark a task completed").add_argument("id", type=int)
    args = parser.parse_args(argv)
    db = connect()
    try:
        if args.command == "add":
            print(f"Added task {add(db, args.title)}: {args.title}")
        elif args.command == "list":
            rows = tasks(db)
            if not rows:
                print("No tasks.")
            for task_id, title, done in rows:
                print(f"{task_id} [{'x' if done else ' '}] {title}")
        elif not complete(db, args.id):
            print(f"No task {args.id}.", file=sys.stderr)
            return 1
        else:
            print(f"Completed task {args.id}.")
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

TRACKER_TESTS = '''import pytest

import tracker


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKER_DB", str(tmp_path / "tasks.db"))


def test_add_prints_the_new_id(capsys):
    assert tracker.main(["add", "Buy milk"]) == 0
    assert capsys.readouterr().out == "Added task 1: Buy milk\\n"


def test_list_shows_open_and_completed_tasks(capsys):
    tracker.main(["add", "Buy milk"])
    tracker.main(["add", "Walk the dog"])
    tracker.main(["complete", "1"])
    capsys.readouterr()
    tracker.main(["list"])
    assert capsys.readouterr().out == "1 [x] Buy milk\\n2 [ ] Walk the dog\\n"


def test_list_without_tasks(capsys):
    tracker.main(["list"])
    assert capsys.readouterr().out == "No tasks.\\n"


def test_complete_an_unknown_id(capsys):
    assert tracker.main(["complete", "7"]) == 1
    assert capsys.readouterr().err == "No task 7.\\n"
'''

OUTLINE = ("Before I start, the outline:\n\n- `tracker.py`: the SQLite storage (connect, add, tasks, complete) and "
           "the argparse CLI (`add`, `list`, `complete`) in one small module.\n- `test_tracker.py`: pytest tests "
           "of each command through `main()`, each on its own database (`TRACKER_DB`).\n\nOrder: the module, "
           "then the tests, then pytest and ruff.")


def tracker(careful: bool) -> list[dict[str, Any]]:
    turns = [{"text": OUTLINE, "tool_calls": [call("write_file", path="tracker.py", content=TRACKER)]},
             {"text": "Now the tests.", "tool_calls": [call("write_file", path="test_tracker.py",
                                                             content=TRACKER_TESTS)]}]
    if careful:
        turns += [{"text": "Running the tests and the linter.", "tool_calls": [PYTEST]},
                  {"tool_calls": [call("run_command", command="ruff check .")]}]
    turns.append({"text": "Built `tracker.py` (add, list, complete over SQLite in `tasks.db` or `$TRACKER_DB`) with "
                          "tests in `test_tracker.py`."})
    return turns


RESTOCK = '''

def restock(stock: dict[str, int], item: str, amount: int) -> int:
    """Put ``amount`` of ``item`` back in stock; the new level (an unknown item starts at 0)."""
    if amount <= 0:
        raise ValueError("amount must be positive")
    stock[item] = stock.get(item, 0) + amount
    return stock[item]
'''
RESTOCK_TESTS = '''

def test_restock_raises_the_level() -> None:
    stock = {"apples": 1}
    assert restock(stock, "apples", 4) == 5
    assert restock(stock, "pears", 2) == 2


def test_restock_needs_a_positive_amount() -> None:
    with pytest.raises(ValueError):
        restock({}, "apples", 0)
'''
TAIL = "    stock[item] = level - amount\n    return stock[item]\n"


def brownfield(careful: bool) -> list[dict[str, Any]]:
    turns = [{"text": "Reading the package first.", "tool_calls": [call("read_file", path="src/inventory/stock.py"),
                                                                    call("read_file", path="tests/test_stock.py")]},
             {"tool_calls": [
                 call("edit_file", path="src/inventory/stock.py", old_string=TAIL, new_string=TAIL + RESTOCK),
                 call("multi_edit", path="tests/test_stock.py", edits=[
                     {"old_string": "from inventory.stock import take",
                      "new_string": "from inventory.stock import restock, take"},
                     {"old_string": '        take({"apples": 1}, "apples", 2)\n',
                      "new_string": '        take({"apples": 1}, "apples", 2)\n' + RESTOCK_TESTS}])]}]
    if not careful:  # "tidies" the shared settings it was told to leave alone
        turns.append({"text": "Also tidying the project settings.", "tool_calls": [
            call("read_file", path="pyproject.toml"),
            call("edit_file", path="pyproject.toml", old_string="line-length = 100", new_string="line-length = 120")]})
    turns += [{"tool_calls": [PYTEST]},
              {"text": "Added `restock()` to `src/inventory/stock.py` with two tests; the tests pass."}]
    return turns


def bugfix(careful: bool) -> list[dict[str, Any]]:
    if not careful:  # guards against a division it did not understand, and stops
        return [{"tool_calls": [call("read_file", path="textstats.py")]},
                {"tool_calls": [call("edit_file", path="textstats.py", old_string="/ len(found)",
                                     new_string="/ max(len(found), 1)")]},
                {"text": "Fixed the average."}]
    return [{"text": "First the failing test.", "tool_calls": [PYTEST]},
            {"tool_calls": [call("read_file", path="textstats.py")]},
            {"text": "`split(\" \")` keeps empty strings between double spaces; `split()` does not.",
             "tool_calls": [call("edit_file", path="textstats.py", old_string='return text.split(" ")',
                                 new_string="return text.split()")]},
            {"tool_calls": [PYTEST]},
            {"text": "Fixed `words()` in `textstats.py` to split on any whitespace; all tests pass."}]


RENAMED = ("geometry/report.py", "main.py", "tests/test_shapes.py")


def rename(careful: bool) -> list[dict[str, Any]]:
    turns = [{"text": "Finding every use.", "tool_calls": [call("grep", pattern="calc_area")]},
             {"tool_calls": [call("read_file", path="geometry/shapes.py"),
                             *(call("read_file", path=p) for p in RENAMED if careful)]}]
    edits = [call("edit_file", path="geometry/shapes.py", old_string="def calc_area(", new_string="def area_of(")]
    if careful:
        edits += [call("edit_file", path=p, old_string="calc_area", new_string="area_of", replace_all=True)
                  for p in RENAMED]
    turns.append({"tool_calls": edits})
    if careful:
        turns.append({"tool_calls": [PYTEST]})
    turns.append({"text": "Renamed `calc_area` to `area_of`."})
    return turns


SLUGIFY = '''"""URL slugs for article titles."""

import re


def slugify(title: str) -> str:
    """Lowercase words joined by single hyphens; punctuation dropped."""
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))
'''
SLUG_TESTS = '''from slug import slugify


def test_words_are_joined_with_hyphens() -> None:
    assert slugify("Hello, World!").lower() == "hello-world"


def test_slugs_are_lowercase() -> None:
    assert slugify("The Big  Picture") == "the-big-picture"
'''
QUESTION = ("The requirements contradict each other: the editors need slugs that keep the title's capitalisation "
            "(old links use it), the web team needs lowercase-only slugs (case-sensitive routes), and both say "
            "their rule applies to every slug. Which rule wins?")


def contradiction(careful: bool) -> Any:
    build = [{"tool_calls": [call("read_file", path="slug.py"), call("read_file", path="test_slug.py")]},
             {"tool_calls": [call("write_file", path="slug.py", content=SLUGIFY),
                             call("write_file", path="test_slug.py", content=SLUG_TESTS)]},
             {"tool_calls": [PYTEST]},
             {"text": "Implemented `slugify` (lowercase, hyphen-joined words) with tests."}]
    if not careful:  # picks a side without asking
        return build
    ask = [{"tool_calls": [call("read_file", path="slug.py"), call("read_file", path="test_slug.py")]},
           {"text": "Two requirements cannot both hold.",
            "tool_calls": [call("ask_user", question=QUESTION, options=["keep the capitalisation", "lowercase"])]}]
    return {"cases": [{"when": "Previous clarifications", "turns": build}, {"turns": ask}]}


SUMMARY = '''

def summary(numbers: list[float]) -> dict:
    if not numbers: raise ValueError("summary of no numbers")
    return {"count": len(numbers), "minimum": min(numbers),
            "maximum": max(numbers), "mean": mean(numbers)}
'''
SUMMARY_TEST = '''

def test_summary() -> None:
    assert summary([3, 1, 2]) == {"count": 3, "minimum": 1,
        "maximum": 3, "mean": 2}
'''


def autofix(careful: bool) -> list[dict[str, Any]]:
    # Correct code with an unused import and untidy formatting: `ruff check --fix` and `ruff format` repair it.
    return [{"tool_calls": [call("read_file", path="stats.py"), call("read_file", path="test_stats.py")]},
            {"tool_calls": [
                call("edit_file", path="stats.py", old_string='"""Statistics helpers."""\n',
                     new_string='"""Statistics helpers."""\nimport os\n'),
                call("edit_file", path="stats.py", old_string="    return sum(numbers) / len(numbers)\n",
                     new_string="    return sum(numbers) / len(numbers)\n" + SUMMARY),
                call("multi_edit", path="test_stats.py", edits=[
                    {"old_string": "from stats import mean", "new_string": "from stats import mean, summary"},
                    {"old_string": "    assert mean([1, 2, 3]) == 2\n",
                     "new_string": "    assert mean([1, 2, 3]) == 2\n" + SUMMARY_TEST}])]},
            *([{"tool_calls": [PYTEST]}] if careful else []),
            {"text": "Added `summary()` to `stats.py` with a test."}]


TASKS = {"tracker": tracker, "brownfield": brownfield, "bugfix": bugfix, "rename": rename,
         "contradiction": contradiction, "autofix": autofix}
MODELS = {"solver": (True, 0.004), "sloppy": (False, 0.0015)}


def main() -> None:
    for model, (careful, cost) in MODELS.items():
        folder = HERE / model
        folder.mkdir(exist_ok=True)
        for task, make in TASKS.items():
            script = make(careful)
            if isinstance(script, dict):
                script = {"cases": [{**case, "turns": priced(case["turns"], cost)} for case in script["cases"]]}
            else:
                script = priced(script, cost)
            (folder / f"{task}.json").write_text(json.dumps(script, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {folder.name}/{task}.json")


if __name__ == "__main__":
    main()
