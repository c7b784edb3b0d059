"""``anvil eval``: measure anvil on suites of tasks, as a program outside the engine.

It runs anvil headless as subprocesses (one per run, in a fresh copy of the task, with its own data dir), reads
their stream-json, checks each run's result itself, and reports: a JSONL record per run, a summary table, an HTML
report, and ``compare`` between two result sets. Runs go to this machine's threads or to a Ray cluster.
"""
