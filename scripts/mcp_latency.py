"""Latency of each MCP tool over stdio, as an agent sees it: a real `nexusbrain mcp` child
process driven by the MCP SDK's client, round trip per call (JSON-RPC over pipes included).

Usage: python scripts/mcp_latency.py [--memories 300] [--calls 50] [--embedder edge] [--seed 7]

1. Starts `nexusbrain --db <fresh temp db> mcp` and stores --memories generated memories with the
   `remember` tool, and a graph fact per ten memories (at least one per person) with `graph_add`.
2. Calls every tool once to warm it, then --calls times (varied arguments), and prints the median
   and p95 per tool in milliseconds, and the start-up time (spawn to initialized).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

SUBJECTS = [
    "the staging database",
    "the deploy",
    "the api gateway",
    "alice",
    "bob",
    "the vault",
    "the orders table",
    "the nightly backup",
    "the search index",
    "the billing job",
]
VERBS = [
    "moved to",
    "failed on",
    "depends on",
    "was rotated by",
    "is owned by",
    "timed out on",
    "was migrated to",
    "reads from",
    "was paused for",
    "replaced",
]
OBJECTS = [
    "db-2",
    "region eu-west",
    "the new cluster",
    "kubernetes",
    "the old vm",
    "friday",
    "the on-call rota",
    "version 4.2",
    "the cache",
    "the security review",
]
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
TEAMS = ["acme", "globex", "initech", "umbrella"]


def memory(rng: random.Random, n: int) -> str:
    when = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    words = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    return f"Note {n}: {words} on {when}."


def query(rng: random.Random) -> str:
    return f"what happened to {rng.choice(SUBJECTS)} {rng.choice(OBJECTS)}"


Call = Callable[[int], tuple[str, dict[str, Any]]]


def calls(rng: random.Random, documents: int, relationships: int) -> dict[str, Call]:
    return {
        "search": lambda i: ("search", {"query": query(rng), "k": 10}),
        "recall": lambda i: ("recall", {"query": query(rng), "budget_tokens": 800}),
        "remember": lambda i: ("remember", {"text": f"Measured memory {i}: {query(rng)}."}),
        "get_document": lambda i: ("get_document", {"id": rng.randint(1, documents)}),
        "graph_relations": lambda i: ("graph_relations", {"entity": rng.choice(PEOPLE)}),
        "graph_history": lambda i: (
            "graph_history",
            {"relationship_id": rng.randint(1, relationships)},
        ),
        "graph_add": lambda i: (
            "graph_add",
            {"relationships": [{"from": f"person {i}", "type": "works_at", "to": "acme"}]},
        ),
        "status": lambda i: ("status", {}),
    }


async def timed(client: Client, name: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(name, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if getattr(result, "is_error", False):
        raise SystemExit(f"{name} {arguments} failed: {result}")
    return elapsed


async def seed(client: Client, rng: random.Random, memories: int) -> int:
    for n in range(1, memories + 1):
        await client.call_tool("remember", {"text": memory(rng, n)})
    facts = [
        {
            "from": PEOPLE[n % len(PEOPLE)],
            "type": "works_at",
            "to": rng.choice(TEAMS),
            "valid_at": f"{2000 + n // len(PEOPLE)}-01-01",
        }
        for n in range(max(len(PEOPLE), memories // 10))
    ]
    await client.call_tool("graph_add", {"relationships": facts})
    return len(facts)


async def measure(db: Path, args: argparse.Namespace) -> tuple[float, dict[str, list[float]]]:
    rng = random.Random(args.seed)
    server = StdioServerParameters(
        command=str(Path(sys.executable).with_name("nexusbrain")),
        args=["--db", str(db), "mcp"],
        env={"BRAIN_EMBEDDER": args.embedder},
    )
    started = time.perf_counter()
    async with Client(server) as client:
        startup = (time.perf_counter() - started) * 1000
        relationships = await seed(client, rng, args.memories)
        times: dict[str, list[float]] = {}
        for name, make in calls(rng, args.memories, relationships).items():
            await timed(client, *make(-1))
            times[name] = [await timed(client, *make(i)) for i in range(args.calls)]
    return startup, times


def report(startup: float, times: dict[str, list[float]], args: argparse.Namespace) -> None:
    print(
        f"{args.memories} memories, {args.calls} calls per tool, embedder {args.embedder}, "
        f"seed {args.seed}; milliseconds per call over stdio; start-up {startup:.0f} ms"
    )
    print("| tool | median | p95 |")
    print("| --- | --- | --- |")
    for name, values in times.items():
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"| {name} | {statistics.median(ordered):.1f} | {p95:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--embedder", default="edge", help="edge (the default), hashing, none")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        startup, times = anyio.run(measure, Path(folder) / "brain.db", args)
    report(startup, times, args)


if __name__ == "__main__":
    main()
