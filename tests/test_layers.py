"""The package's layers run one way, and its public API is sorted, importable and light.

The layers, lowest first (a module may import its own layer and those below it, never one above):

    1. values      _version, lazy, errors, details, steps, jsonio, normalize, resources, outputs, prompts, models,
                   incoming (text that comes in), terminal (text that goes out to a terminal)
    2. retrieval   the corpus, the analyzer, the BM25 index (needs only values)
    3. text        literals, grounding, grammar, parse, answer_form, compare, injection, listing, hops (the step
                   format, what an answer may say, how a search lists passages, and a run's hops; grounding splits
                   sentences with retrieval's splitter)
    4. tools       the Tool protocol and the corpus tools over retrieval
    5. backends    the Backend protocol, its registry and the engines
    6. checks      the answer checks and rewrites of a Final and the pipeline that runs them (they read the run
                   through protocols of their own, so they import no strategy)
    7. agents      the strategies, their run config, options and profiles
    8. runner      Session: a backend, a corpus and a strategy assembled; sources: the passages a run rests on
    9. eval        datasets, metrics, the evaluation runner, reports
   10. entry       mcp_server, serve (the HTTP server), cli, and the package's own __init__ (the public API)

Every import statement of every module counts, wherever it stands: at the top, inside a function, or under
TYPE_CHECKING (a type-only import is still an arrow a reader follows). Within a layer, modules may import each
other, but no chain of imports may come back to where it started (no circles, in a layer or across). The same
order is written in docs/architecture.md.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "offline_agent"
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "values",
        (
            "_version",
            "lazy",
            "errors",
            "details",
            "steps",
            "jsonio",
            "normalize",
            "resources",
            "outputs",
            "prompts",
            "models",
            "incoming",
            "terminal",
        ),
    ),
    ("retrieval", ("retrieval",)),
    ("text", ("literals", "grounding", "grammar", "parse", "answer_form", "compare", "injection", "listing", "hops")),
    ("tools", ("tools",)),
    ("backends", ("backends",)),
    ("checks", ("checks",)),
    ("agents", ("agents",)),
    ("runner", ("runner", "sources")),
    ("eval", ("eval",)),
    ("entry", ("mcp_server", "serve", "cli", "")),  # "": the package's __init__, the public API
]
LAYER_OF = {part: rank for rank, (_, parts) in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_module(name: str, known: dict[str, Path]) -> bool:
    """A module of the package: a .py file, a package, or a compiled extension (retrieval._kernel)."""
    if name in known:
        return True
    folder = ROOT.joinpath(*name.split(".")[:-1])
    return any(folder.glob(name.rsplit(".", 1)[-1] + ".*"))


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, module) for every module of the package that `path` imports, anywhere in it."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [
                f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}", known) else base for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and not is_module(target, known):
                target = target.rpartition(".")[0]
            if target.startswith("offline_agent") and target != name and target in known:
                yield node.lineno, target


def layer(name: str) -> int:
    parts = name.split(".")
    return LAYER_OF[parts[1] if len(parts) > 1 else ""]


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {target for _, target in imports(name, path, known)} for name, path in known.items()}


def test_every_module_has_a_layer() -> None:
    missing = sorted(name for name in modules() if (name.split(".") + [""])[1] not in LAYER_OF)
    assert not missing, f"add these to LAYERS (and docs/architecture.md): {missing}"


def test_no_import_runs_up_a_layer() -> None:
    known = modules()
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {target} ({LAYERS[layer(name)][0]} -> {LAYERS[layer(target)][0]})"
        for name, path in known.items()
        for line, target in imports(name, path, known)
        if layer(target) > layer(name)
    ]
    assert not upward, "imports that run up a layer:\n" + "\n".join(upward)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_circles() -> None:
    assert circles(graph()) == []


def test_the_circle_finder_finds_circles() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_public_api_is_sorted_and_every_name_imports() -> None:
    import offline_agent

    names = offline_agent.__all__
    # ruff's order (RUF022): CONSTANTS, then Classes and functions, each alphabetical
    assert names == sorted(names, key=lambda name: (not name.isupper(), name))
    for name in names:
        assert getattr(offline_agent, name) is not None, name
    assert set(names) <= set(dir(offline_agent))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        offline_agent.nope  # noqa: B018


def test_the_public_api_covers_the_readme_python_section() -> None:
    import offline_agent

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    used = {
        line.split(" import ", 1)[1] for line in section.splitlines() if line.startswith("from offline_agent import")
    }
    for names in used:
        for name in names.split(","):
            assert name.strip() in offline_agent.__all__, name


def test_importing_the_package_stays_light() -> None:
    """`import offline_agent` loads no model engine and no compiled kernel, and no agent; asking for every public
    name loads the agents but still no model engine (backends import theirs when one is built)."""
    code = (
        "import sys, offline_agent\n"
        "heavy = ('llama_cpp', 'torch', 'numba', 'transformers')\n"
        "loaded = lambda: sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
        "print(loaded(), 'offline_agent.agents' in sys.modules)\n"
        "[getattr(offline_agent, name) for name in offline_agent.__all__]\n"
        "print(loaded())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.splitlines() == ["[] False", "[]"], out.stdout + out.stderr
