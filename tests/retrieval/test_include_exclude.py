"""`index --include GLOB` and `--exclude GLOB`: how a pattern matches a relative path, what the walk then reads,
and how `--update` keeps the patterns stored with the index (or replaces them when given others)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from offline_agent.cli import _register, cli
from offline_agent.errors import ConfigError
from offline_agent.retrieval import IngestOptions, ingest_paths
from offline_agent.retrieval.globs import GlobMatcher, PathFilter

_register()


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*.md", ["a.md", "notes/2024/a.md"], ["a.mdx", "md", "a.txt"]),
        ("**/*.md", ["a.md", "x/y/a.md"], ["a.txt", "x/a.rst"]),
        ("drafts/*", ["drafts/a.md", "drafts/old"], ["drafts", "x/drafts/a.md", "drafts/old/a.md"]),
        ("drafts", ["drafts", "x/drafts"], ["drafts.md", "mydrafts"]),
        ("docs/**/*.rst", ["docs/a.rst", "docs/x/y/a.rst"], ["a.rst", "other/docs/a.rst"]),
        ("docs/**", ["docs/a", "docs/x/y"], ["docs", "x/docs/a"]),
        ("/top.txt", ["top.txt"], ["x/top.txt"]),
        ("build/", ["build", "src/build"], ["builds"]),
        ("ch?.md", ["ch1.md", "x/ch2.md"], ["ch10.md", "ch/.md"]),
        ("[ab]*.txt", ["a1.txt", "b.txt"], ["c.txt"]),
        ("[!ab]*.txt", ["c.txt", "x/c.txt"], ["a.txt", "b.txt"]),
        ("a[!b]c", ["axc"], ["abc", "a/c"]),
        ("a+b(1).md", ["a+b(1).md"], ["aab1.md"]),
        ("README.MD", ["README.MD"], ["readme.md"]),
    ],
)
def test_how_a_glob_matches_a_relative_path(pattern: str, matches: list[str], misses: list[str]) -> None:
    matcher = GlobMatcher(pattern)
    assert [p for p in matches if not matcher.fullmatch(p)] == []
    assert [p for p in misses if matcher.fullmatch(p)] == []


def reference_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression the matcher replaced (it backtracks, so only for short paths): the reference."""
    anchored, body, out, i = "/" in pattern.rstrip("/"), pattern.strip("/"), [], 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] in "*?":
            out.append("[^/]*" if body[i] == "*" else "[^/]")
            i += 1
        elif body[i] == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : end]
            negate = inner.startswith("!")
            inner = re.sub(r"([\\\]\[^])", r"\\\1", inner[1:] if negate else inner)  # "[" too: no nested set
            out.append(f"[{'^/' if negate else ''}{inner}]")
            i = end + 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    return re.compile(("" if anchored else "(?:.*/)?") + "".join(out), re.DOTALL)


_GLOB_PARTS = st.sampled_from(["*", "**", "**/", "?", "/", "a", "b", ".", "-", "[ab]", "[!a]", "[a-c]", "[-a]", "["])


@given(st.lists(_GLOB_PARTS, min_size=1, max_size=8).map("".join), st.text("ab./-c\n", max_size=12))
def test_the_matcher_agrees_with_the_regex_it_replaced(pattern: str, path: str) -> None:
    if not pattern.strip("/"):
        return
    try:
        reference = reference_regex(pattern)
    except re.error:  # a backwards range: a traceback before, one line now
        with pytest.raises(ConfigError, match="is backwards"):
            GlobMatcher(pattern)
        return
    assert GlobMatcher(pattern).fullmatch(path) == bool(reference.fullmatch(path)), (pattern, path)


@pytest.mark.parametrize("pattern", ["[z-a]", "notes/[9-0]*.md"])
def test_a_backwards_range_is_one_line(pattern: str) -> None:
    with pytest.raises(ConfigError, match="is backwards"):
        PathFilter(exclude=(pattern,))


def test_a_folder_that_matches_matches_all_it_holds() -> None:
    only_docs = PathFilter(include=("docs",))
    assert only_docs.left_out("docs/a/b.md") is None and only_docs.left_out("src/a.md") == "not matched by --include"
    no_drafts = PathFilter(exclude=("drafts/*",))
    assert no_drafts.left_out("drafts/old/a.md") == "excluded by --exclude drafts/*"
    assert no_drafts.excluded_folder("drafts/old") == "drafts/*" and no_drafts.excluded_folder("drafts") is None
    both = PathFilter(include=("*.md",), exclude=("private.md",))  # exclude wins
    assert both.left_out("notes/private.md") == "excluded by --exclude private.md" and both.left_out("a.md") is None


def test_an_empty_pattern_is_refused() -> None:
    with pytest.raises(ConfigError, match="empty glob pattern"):
        IngestOptions(exclude=("/",))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for name in [
        "readme.md",
        "notes/herons.md",
        "notes/herons.txt",
        "drafts/plan.md",
        "drafts/old/older.md",
        "node_modules/pkg/index.js",
        "src/app.py",
    ]:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {path.stem}\n\nWetland notes on {path.stem} in {name}.\n")
    return root


def read_ids(root: Path, **options) -> list[str]:
    return sorted({p.doc_id for p in ingest_paths(root, IngestOptions(**options)).passages})


def test_the_walk_reads_what_the_patterns_let_in(tree: Path) -> None:
    assert read_ids(tree, include=("*.md",)) == [
        "drafts/old/older.md", "drafts/plan.md", "notes/herons.md", "readme.md"
    ]  # fmt: skip
    assert read_ids(tree, exclude=("drafts/*", "node_modules")) == [
        "notes/herons.md", "notes/herons.txt", "readme.md", "src/app.py"
    ]  # fmt: skip
    assert read_ids(tree, include=("**/*.md",), exclude=("drafts",)) == ["notes/herons.md", "readme.md"]
    ingested = ingest_paths(tree, IngestOptions(include=("notes/*",), exclude=("*.txt",)))
    assert [p.doc_id for p in ingested.passages] == ["notes/herons.md"]
    skipped = {Path(path).relative_to(tree).as_posix(): why for path, why in ingested.skipped}
    assert skipped["notes/herons.txt"] == "excluded by --exclude *.txt"
    assert skipped["readme.md"] == "not matched by --include"


def test_an_excluded_folder_is_not_entered(tree: Path) -> None:
    ingested = ingest_paths(tree, IngestOptions(exclude=("node_modules",)))
    assert (str(tree / "node_modules"), "excluded by --exclude node_modules") in ingested.skipped
    assert not any("pkg" in path for path, _ in ingested.skipped)  # one line for the folder, none for its files


def test_a_file_named_on_the_command_line_is_read_whatever_the_patterns(tree: Path) -> None:
    ingested = ingest_paths([tree / "src" / "app.py"], IngestOptions(include=("*.md",)))
    assert [p.doc_id for p in ingested.passages] == ["app.py"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def doc_ids(name: str) -> list[str]:
    code, out, _ = run("search", "wetland", "--index", name, "--json", "-k", "50")
    return sorted({hit["doc_id"] for hit in json.loads(out)["hits"]})


def test_update_keeps_the_stored_patterns_and_replaces_those_given_again(tree: Path) -> None:
    code, out, _ = run("index", str(tree), "--name", "t", "--include", "*.md", "--exclude", "drafts/*")
    assert code == 0 and doc_ids("t") == ["notes/herons.md", "readme.md"]
    code, out, _ = run("index", "info", "t")
    assert "include: *.md" in out and "exclude: drafts/*" in out

    (tree / "notes" / "egrets.md").write_text("# Egrets\n\nWetland egrets.")
    (tree / "drafts" / "new.md").write_text("# New\n\nA new wetland draft.")
    (tree / "notes" / "egrets.txt").write_text("Wetland egrets as text.")
    code, out, err = run("index", str(tree), "--name", "t", "--update")
    assert code == 0 and "updated t: 1 new, 0 changed, 0 removed, 2 unchanged files" in out
    assert err == "" and doc_ids("t") == ["notes/egrets.md", "notes/herons.md", "readme.md"]

    code, out, err = run("index", "--update", "--name", "t", "--exclude", "notes")  # the roots and include are kept
    assert code == 0 and "updated t: 3 new, 0 changed, 2 removed, 1 unchanged files" in out
    assert "--exclude changed from ['drafts/*'] to ['notes']: files now left out are dropped" in err
    assert doc_ids("t") == ["drafts/new.md", "drafts/old/older.md", "drafts/plan.md", "readme.md"]
    code, out, _ = run("index", "info", "t", "--json")
    assert json.loads(out)["ingest"]["include"] == ["*.md"] and json.loads(out)["ingest"]["exclude"] == ["notes"]
