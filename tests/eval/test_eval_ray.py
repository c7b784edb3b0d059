"""`anvil eval --backend ray` against a local Ray instance the test starts, reached as a cluster is: through
RAY_ADDRESS from another process. The records are the local backend's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import ray  # the `ray` extra; CI installs it (.ci/run)

from tests.eval.conftest import eval_run, make_model, make_task, records, say, write


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()  # stops the instance this test started, and only it


def test_runs_go_to_the_cluster_and_come_back_as_records(tmp_path: Path, ray_address: str) -> None:
    suite = tmp_path / "suite"
    make_task(suite, "greet", verify="grep -q hello greeting.txt")
    make_task(suite, "count", verify="test -f count.txt")
    good = make_model(tmp_path, "good", {"greet": [write("greeting.txt", "hello\n"), say("Done.")],
                                         "count": [write("count.txt", "3\n"), say("Done.")]})
    bad = make_model(tmp_path, "bad", {"greet": [write("greeting.txt", "bye\n"), say("Done.")],
                                       "count": [say("Nothing to do.")]})
    out = tmp_path / "out"
    result = eval_run(tmp_path, str(suite), "--model", good, "--model", bad, "--backend", "ray", "--jobs", "2",
                      "--out", str(out), env={"RAY_ADDRESS": ray_address})
    assert result.returncode == 0, result.stderr
    runs = {r["run_id"]: r for r in records(out / "results.jsonl")}
    assert {k: v["success"] for k, v in runs.items()} == {
        "count-good-none-1": True, "count-bad-none-1": False, "greet-good-none-1": True, "greet-bad-none-1": False}
    greet = runs["greet-good-none-1"]
    assert greet["cost"] == 0.02 and greet["tokens"] == {"input": 2200, "output": 70, "cached": 1400}
    assert Path(greet["session"]).is_file() and "+hello" in greet["diff"]
    assert "on ray, 2 at a time" in result.stderr and (out / "report.html").is_file()


def test_without_ray_reachable_it_says_so_in_one_line(tmp_path: Path) -> None:
    make_task(tmp_path / "suite", "greet", verify="true")
    result = eval_run(tmp_path, "suite", "--model", "scripted", "--backend", "ray", "--out", str(tmp_path / "out"),
                      env={"RAY_ADDRESS": "127.0.0.1:9"}, timeout=300)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("anvil eval: could not connect")]
    assert len(lines) == 1 and "127.0.0.1:9" in lines[0] and "Traceback" not in result.stderr
