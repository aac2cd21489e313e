"""The packages' import direction: core <- envs <- agents <- bench <- report, train above both.

The core knows no client, and the server no web page (the playground mounts through an entry point).

Every ``import`` and ``from ... import`` of every module under src/integrity_gym counts, those
inside functions and under ``TYPE_CHECKING`` too: a lazy import still ties two packages together.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

import integrity_gym

ROOT = Path(integrity_gym.__file__).parent
PACKAGES = ("core", "envs", "agents", "client", "server", "bench", "train", "report", "web")

#: Package edges that close a circle today and are not yet fixed: each is tolerated by name, so that
#: any other edge closing a circle fails. None left.
KNOWN: set[tuple[str, str]] = set()


def _modules() -> Iterator[tuple[str, Path]]:
    """``(dotted module name, path)`` of every module of the package."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("integrity_gym", *path.relative_to(ROOT).with_suffix("").parts)
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imported(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """``(dotted name, line)`` of everything ``module`` imports, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # ``from integrity_gym import core`` names a package in what it imports.
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)


def _package(name: str) -> str | None:
    """The package of ``PACKAGES`` that a dotted name lies in, if any."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "integrity_gym" and parts[1] in PACKAGES else None


def _edges() -> dict[tuple[str, str], list[str]]:
    """Package -> package edges, each with the places (``path:line``) that make it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in _modules():
        source = _package(module)
        for name, line in _imported(module, path):
            target = _package(name)
            place = f"{path.relative_to(ROOT.parent)}:{line}"
            if source and target and target != source and place not in edges.get((source, target), []):
                edges.setdefault((source, target), []).append(place)
    return edges


def _cycle(edges: set[tuple[str, str]]) -> list[str] | None:
    """One cycle of the graph, as the packages along it (the first repeated at the end), or None."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


EDGES = _edges()


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("bench", "train"), ("bench", "report"), ("report", "train"), ("core", "client"), ("server", "web")],
)
def test_a_lower_package_imports_no_higher_one(package: str, forbidden: str) -> None:
    places = EDGES.get((package, forbidden), [])
    assert not places, f"integrity_gym.{package} imports integrity_gym.{forbidden}: {', '.join(places)}"


def test_report_reaches_nothing_that_imports_train() -> None:
    reached, todo = {"report"}, ["report"]
    while todo:
        source = todo.pop()
        for a, b in EDGES:
            if a == source and b not in reached:
                reached.add(b)
                todo.append(b)
    assert "train" not in reached, f"integrity_gym.report reaches train through {sorted(reached - {'report'})}"


def test_no_cycle_among_the_packages() -> None:
    cycle = _cycle(set(EDGES) - KNOWN)
    if cycle:
        hops = [f"{a} -> {b} ({', '.join(EDGES[(a, b)][:3])})" for a, b in pairwise(cycle)]
        pytest.fail("package import cycle: " + " -> ".join(cycle) + "\n" + "\n".join(hops))


def test_every_known_edge_still_exists() -> None:
    gone = sorted(KNOWN - set(EDGES))
    assert not gone, f"strike these from KNOWN, the code no longer has them: {gone}"


#: Packages that serve every environment alike: what one environment adds is read from its
#: ``Env.extras`` (core.extras), never looked up in a table of the built-ins.
GENERIC = ("core", "client", "server", "bench", "train", "report", "web")


def test_no_generic_package_names_a_builtin_environment() -> None:
    # Kills: a table keyed by environment name in generic code (prefills, radar axes, page views,
    # dialects) or a module found by name (f"integrity_gym.agents.heuristic.{env}").
    from integrity_gym.core.registry import BUILTIN_ENVS

    found = []
    for module, path in _modules():
        if _package(module) not in GENERIC:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listing = {  # the registry's own list of its built-in folders
            id(n) for a in ast.walk(tree) if isinstance(a, ast.AnnAssign | ast.Assign)
            and "BUILTIN_ENVS" in ast.unparse(a).split("=")[0] for n in ast.walk(a)
        }  # fmt: skip
        for node in ast.walk(tree):
            named = isinstance(node, ast.Constant) and node.value in BUILTIN_ENVS and id(node) not in listing
            by_name = isinstance(node, ast.JoinedStr) and "integrity_gym.agents." in ast.unparse(node)
            if named or by_name:
                found.append(f"{path.relative_to(ROOT.parent)}:{getattr(node, 'lineno', '?')}")
    assert not found, f"generic code names a built-in environment: {', '.join(found)}"
