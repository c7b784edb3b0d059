"""The warm engine: a pre-imported anvil that forks a fresh process for each run.

``import litellm`` alone takes 2-5 s, and its first request about 1 s more; no front end can send its first
request sooner than that from a cold start. The engine is a background process (one per user, data directory
and anvil install) that has imported litellm, the front ends and everything a first request needs, and then
waits on a private Unix socket. ``anvil`` (:mod:`anvil.engine.client`) sends it the run: its arguments, working
directory, environment and its terminal's (or pipes') file descriptors. The engine forks; the child takes them
over and runs exactly what a fresh ``anvil`` would run (:mod:`anvil.engine.child`), so settings, trust,
the sandbox, approvals, API keys and the session are built fresh for each run, from that run's own environment
and directory, and approvals are asked on the person's own terminal. Only what was imported and initialised
before any run is shared.

With ``ANVIL_ENGINE=off`` everything runs in the ``anvil`` process itself, and any problem with the engine (it
is not running yet, it cannot start, its socket is not private, it refuses a client whose context differs from
its own: :mod:`anvil.engine.peer`) falls back to that.
"""
