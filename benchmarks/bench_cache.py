"""Prompt caching over a whole tool-using session, against the local Anthropic Messages API server.

A scripted 30-step session (29 read_file calls on different files, then an answer) runs twice through anvil's
real runtime (system prompt, tools, history) and litellm's Anthropic code: once as anvil sends it, with its
cache breakpoints, and once with caching off. The server reports cache reads and writes the way the API does
(``tests/support/anthropic_rules.py``: a request whose prefix up to a breakpoint matches an earlier request's
reads that prefix from cache). Printed: the share of input tokens read from cache after the second step (aim:
above 85%), the lowest share of any of those steps, and the session's cost at litellm's prices for
claude-sonnet-4-5 with caching against the same session without it.

Run: python benchmarks/bench_cache.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.anthropic_server import ScriptedAnthropicServer  # the repository root is on sys.path above

MODEL = "anthropic/claude-sonnet-4-5"
AIM = 0.85


def turns(steps: int) -> list[dict[str, Any]]:
    reads = [{"text": f"Reading part {n}.",
              "tool_calls": [{"name": "read_file", "arguments": {"path": f"src/part{n}.py"}}]}
             for n in range(steps - 1)]
    return [*reads, {"text": "I have read every part; the parser lives in part 3."}]


def project(root: Path, steps: int) -> None:
    (root / "src").mkdir(parents=True)
    for n in range(steps):
        body = "".join(f"def handler_{n}_{i}(request):\n    return process(request, step={i})\n\n" for i in range(40))
        (root / "src" / f"part{n}.py").write_text(f'"""Part {n} of the service."""\n\n{body}')


async def session(steps: int, caching: bool) -> tuple[list[dict[str, int]], float | None]:
    """One scripted session; the usage the server reported per request, and the cost anvil computed."""
    from anvil.config import Settings
    from anvil.facade import SessionFacade
    from anvil.runtime import build_model, open_runtime

    with tempfile.TemporaryDirectory() as tmp, ScriptedAnthropicServer(turns(steps)) as server:
        base = Path(tmp)
        os.environ.update(XDG_CONFIG_HOME=str(base / "config"), XDG_DATA_HOME=str(base / "data"),
                          ANTHROPIC_API_KEY="bench-key")
        root = base / "project"
        project(root, steps)
        settings = Settings(model=MODEL, api_base=server.url, max_iterations=steps + 5)
        model = build_model(settings)
        model.prompt_caching = caching  # type: ignore[attr-defined]
        facade = SessionFacade(open_runtime(settings, root, model=model))
        async for _ in facade.submit("Read every part of the service and tell me where the parser is."):
            pass
        cost = facade.usage().cost
        await facade.close()
        if server.errors:
            raise SystemExit(f"the server rejected a request: {server.errors[0]}")
        return [s.usage for s in server.served if s.usage is not None], cost


def report(label: str, usages: list[dict[str, int]], cost: float | None) -> None:
    totals = [u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usages]
    later = range(2, len(usages))  # after the second step
    read = sum(usages[i]["cache_read_input_tokens"] for i in later)
    share = read / sum(totals[i] for i in later) if later else 0.0
    lowest = min((usages[i]["cache_read_input_tokens"] / totals[i] for i in later), default=0.0)
    priced = f"${cost:.4f}" if cost is not None else "unknown"
    print(f"  {label:<16} {len(usages):>3} requests, {sum(totals):>9,} input tokens, cost {priced}; "
          f"read from cache after step 2: {share:6.1%} (lowest step {lowest:.1%})")
    if label == "with caching":
        print(f"  {'':<16} cache reads after step 2 (budget: above {AIM:.0%}): {'ok' if share > AIM else 'MISSED'}")


def main() -> None:
    steps = 10 if "--quick" in sys.argv else 30
    print(f"prompt caching over a {steps}-step tool-using session ({MODEL} prices, local Anthropic server)")
    cached, cached_cost = asyncio.run(session(steps, caching=True))
    plain, plain_cost = asyncio.run(session(steps, caching=False))
    report("with caching", cached, cached_cost)
    report("without caching", plain, plain_cost)
    if cached_cost is not None and plain_cost:
        print(f"  cost with caching / without: {cached_cost / plain_cost:.2f}x "
              f"(${cached_cost:.4f} against ${plain_cost:.4f})")


if __name__ == "__main__":
    main()
