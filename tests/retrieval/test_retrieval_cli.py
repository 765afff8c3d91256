"""The `index` and `search` commands, through click's runner, with indexes in a temporary home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from offline_agent.cli import _register, cli

_register()


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_build_search_list_info_rm(docs_dir: Path) -> None:
    code, out = run("index", str(docs_dir), "--name", "demo")
    assert code == 0, out
    assert "indexed 3 passages from 3 documents in 3 files into demo" in out

    code, out = run("search", "eiffel tower", "--index", "demo", "-k", "2")
    assert code == 0
    assert out.splitlines()[0].startswith("1. [") and "Eiffel Tower" in out.splitlines()[0]
    assert "**Eiffel** **Tower**" in out

    code, out = run("search", "eiffel tower", "--index", "demo", "--json")
    hits = json.loads(out)["hits"]
    assert hits[0]["doc_id"] == "eiffel.md" and hits[0]["rank"] == 1
    text = hits[0]["text"]
    assert [text[s:e] for s, e in hits[0]["highlights"]][:2] == ["Eiffel", "Tower"]

    code, out = run("index", "list")
    assert code == 0 and out.startswith("demo\t3 passages")
    code, out = run("index", "info", "demo", "--verify", "--json")
    info = json.loads(out)
    assert info["passages"] == 3 and info["verified"] is True and info["bm25"]["variant"] == "okapi"

    code, out = run("index", "rm", "demo")
    assert code == 0 and "removed demo" in out
    code, out = run("index", "list")
    assert "no indexes" in out


def test_update_adds_changes_and_removes_files(docs_dir: Path) -> None:
    run("index", str(docs_dir), "--name", "demo")
    (docs_dir / "thames.txt").write_text("The Thames is a river. Zebras do not live there.")
    (docs_dir / "eiffel.md").unlink()
    (docs_dir / "new.md").write_text("# New\n\nA new file about zebras.")
    code, out = run("index", str(docs_dir), "--name", "demo", "--update")
    assert code == 0, out
    assert "updated demo: 1 new, 1 changed, 1 removed, 1 unchanged files" in out
    code, out = run("search", "zebras", "--index", "demo", "--json")
    assert sorted(h["doc_id"] for h in json.loads(out)["hits"]) == ["new.md", "thames.txt"]
    code, out = run("search", "eiffel", "--index", "demo")
    assert "no passage matches" in out
    # --update with no paths reuses the recorded roots.
    code, out = run("index", "--name", "demo", "--update")
    assert code == 0 and "0 new, 0 changed, 0 removed, 3 unchanged" in out


def test_folder_named_like_a_subcommand_builds_with_explicit_build(tmp_path: Path) -> None:
    folder = tmp_path / "list"
    folder.mkdir()
    (folder / "a.txt").write_text("hello there")
    code, out = run("index", "build", str(folder), "--name", "x")
    assert code == 0 and "indexed 1 passages" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "x", "--index", "nope"), "error: no index named 'nope'"),
        (("search", "x", "--corpus", "nope"), "error: corpus not found: nope"),
        (("index", "info", "nope"), "error: no index named 'nope'"),
        (("index", "rm", "nope"), "error: no index named 'nope'"),
        (("index", "/does/not/exist", "--name", "a"), "error: corpus not found: /does/not/exist"),
        (("index", ".", "--name", "../evil"), "error: bad index name '../evil'"),
        (("index", "--name", "ghost", "--update"), "error: no index named 'ghost' to update"),
    ],
)
def test_user_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    code, out = run(*args)
    assert code == 1
    assert out.strip().startswith(message) and len(out.strip().splitlines()) == 1


def test_empty_corpus_is_an_error_and_leaves_no_index(tmp_path: Path, isolated_home: Path) -> None:
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "empty.txt").write_text("")
    code, out = run("index", str(tmp_path / "e"), "--name", "e")
    assert code == 1 and "corpus is empty" in out and "1 files skipped: empty file" in out
    assert not (isolated_home / "indexes" / "e").exists()


def test_summary_lists_skipped_files(docs_dir: Path) -> None:
    (docs_dir / "bin.txt").write_bytes(b"\x00\x01")
    (docs_dir / "rows.jsonl").write_text('{"text": "ok row"}\nnot json\n')
    code, out = run("index", str(docs_dir), "--name", "demo")
    assert code == 0
    assert "1 files skipped: binary file (NUL bytes)" in out and "bin.txt: binary file (NUL bytes)" in out
    assert "1 records, messages or attachments skipped in 1 files" in out
    assert "rows.jsonl: 1 skipped, first: line 2: invalid JSON" in out


def test_duplicates_are_counted_and_listed(docs_dir: Path) -> None:
    (docs_dir / "copy").mkdir()
    (docs_dir / "copy" / "eiffel.md").write_bytes((docs_dir / "eiffel.md").read_bytes())
    code, out = run("index", str(docs_dir), "--name", "demo")
    assert code == 0 and "indexed 3 passages from 3 documents in 4 files" in out
    assert "1 duplicate files indexed once" in out and "index info demo --duplicates" in out
    code, out = run("index", str(docs_dir), "--name", "demo", "--json")
    assert json.loads(out)["duplicates"] == [
        {"path": str(docs_dir / "copy" / "eiffel.md"), "same_as": str(docs_dir / "eiffel.md")}
    ]
    code, out = run("index", "info", "demo")
    assert "duplicates: 1" in out
    code, out = run("index", "info", "demo", "--duplicates")
    assert out.strip() == f"{docs_dir / 'copy' / 'eiffel.md'}\tsame text as {docs_dir / 'eiffel.md'}"


def test_search_shows_the_heading_path_and_the_line(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Harbour Guide\n\nIntro.\n\n## Fees\n\nA night costs eleven crowns.\n")
    run("index", str(tmp_path), "--name", "demo")
    code, out = run("search", "night crowns", "--index", "demo", "-k", "1")
    lines = out.splitlines()
    assert lines[0].startswith("1. [") and lines[0].endswith("] Harbour Guide > Fees")
    assert lines[1].startswith(f"   {tmp_path / 'guide.md'} (line 5) [")
    code, out = run("search", "night crowns", "--index", "demo", "--json")
    hit = json.loads(out)["hits"][0]
    assert (hit["heading"], hit["line"], hit["page"]) == (["Harbour Guide", "Fees"], 5, 0)


def test_index_with_worker_processes_as_a_user_runs_it(tmp_path: Path, isolated_home: Path) -> None:
    """The real command in a process of its own (worker processes are spawned from it), with two workers."""
    import subprocess
    import sys

    docs = tmp_path / "many"
    docs.mkdir()
    for n in range(10):
        body = " ".join(f"word{(n * 7 + i) % 997} harbour." for i in range(40_000))
        (docs / f"f{n}.md").write_text(f"# File {n}\n\n## Part\n\n{body}\n")
    env = {**__import__("os").environ, "OFFLINE_AGENT_HOME": str(isolated_home)}
    command = [sys.executable, "-m", "offline_agent.cli", "index", str(docs), "--name", "many", "--json"]
    one = subprocess.run([*command, "--workers", "1"], capture_output=True, text=True, env=env, timeout=600)
    two = subprocess.run([*command, "--workers", "2"], capture_output=True, text=True, env=env, timeout=600)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    first, second = json.loads(one.stdout), json.loads(two.stdout)
    assert first["passages"] == second["passages"] > 1000 and first["files_read"] == second["files_read"] == 10
    assert "Traceback" not in two.stderr
