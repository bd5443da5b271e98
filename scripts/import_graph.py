"""The package's import graph, as the layer test reads it: the deepest chain of imports from
one nexusbrain module to another (lazy imports inside functions included), and every import
from a module below `brain` into `brain`, `evals`, `bench` or an interface (there must be none).

Usage:
  python scripts/import_graph.py [--src src/nexusbrain] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from functools import cache
from pathlib import Path

ABOVE = {"brain", "evals", "bench", "operations", "views", "cli", "api", "mcp_server", "web"}
FACE = {"__init__", "__main__"}


def modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules that `path` imports (a package's name stands for its __init__)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a import b`: the module a.b when there is one, else a itself
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [sub if sub in known else node.module for sub in subs]
        found |= {name for name in names if name in known}
    return found


def top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path(__file__).parents[1] / "src/nexusbrain")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = modules(args.src)
    graph = {name: imports(path, set(found)) - {name} for name, path in found.items()}

    @cache
    def deepest(name: str, seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for other in sorted(graph[name]):
            if other not in seen:
                chain = deepest(other, seen | {name})
                if len(chain) > len(best):
                    best = chain
        return (name, *best)

    chain = max((deepest(name) for name in graph if top(name) not in FACE), key=len)
    upward = sorted(
        f"{name} -> {other}"
        for name, targets in graph.items()
        if top(name) not in ABOVE | FACE
        for other in targets
        if top(other) in ABOVE
    )
    edges = sum(len(t) for t in graph.values())
    if args.json:
        print(
            json.dumps(
                {"modules": len(graph), "imports": edges, "deepest": chain, "upward": upward}
            )
        )
    else:
        print(f"{len(graph)} modules, {edges} imports between them")
        print(f"deepest chain ({len(chain)} modules): " + " -> ".join(chain))
        print(f"imports from below brain into brain, evals, bench or an interface: {len(upward)}")
        for line in upward:
            print(f"  {line}")
    sys.exit(1 if upward else 0)


if __name__ == "__main__":
    main()
