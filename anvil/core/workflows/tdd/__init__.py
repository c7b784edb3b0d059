"""The tool-gated TDD workflow (``anvil --workflow tdd``): PRs from a master plan, each on its own branch, step by
step red/green/refactor, reviewed, squashed and merged. The model never decides where the work goes next: the state
machine inside ``get_task`` and ``submit_work`` does.

- ``schema``: ACTIVE_PR.json and ORCHESTRATION_STATE.json, checked on every read;
- ``machine`` (the decision, pure), ``rows`` (the transition table), ``acts`` (what its rows check and do);
- ``texts``: the words; ``tools``: the job's tools; ``git``: the git it runs; ``observe``: what it looks at;
- ``repository``: what must hold to start a job or clear a halt; ``store``: the job's files;
- ``workflow``: all of it on the seam.
"""
