"""Hostile data files: JSON nested 100,000 deep and 5,000-digit integers in every JSON the product reads.

Eval datasets (a JSON list or one JSONL line) are refused with one line naming the record; a corpus file skips
the bad record with its reason (counted and reported) and indexes the rest; a damaged manifest.json or
meta.json makes that one index "damaged" in `index list` while the others are listed as usual; a run folder's
results.jsonl or config.json, and the model digest caches, fail cleanly or are ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import cli, one_line_error

from offline_agent.errors import OfflineAgentError
from offline_agent.eval.datasets import load_dataset
from offline_agent.eval.results import RunFolder
from offline_agent.retrieval import BM25Index, IngestOptions, build_from_paths, ingest_paths, list_indexes

DEEP = "[" * 100_000 + "]" * 100_000
BIG = "7" * 5000
QUESTION = {"id": "q1", "question": "Where is Warsaw?", "answer": "Poland"}

# (label, JSON text of one value) for a record or a whole file
HOSTILE_VALUES = {
    "deep array": DEEP,
    "deep object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "5000-digit integer": BIG,
    "5000-digit negative integer": "-" + BIG,
}


def _eval_datasets(tmp_path: Path) -> list[tuple[str, Path]]:
    good = json.dumps(QUESTION)
    cases = []
    for label, value in HOSTILE_VALUES.items():
        as_id = '{"id": ' + value + ', "question": "q?", "answer": "a"}'
        as_field = '{"id": "q2", "question": "q?", "answer": "a", "extra": ' + value + "}"
        for where, record in (("record", value), ("id", as_id), ("field", as_field)):
            name = f"{label} as {where}".replace(" ", "_")
            jsonl = tmp_path / f"{name}.jsonl"
            jsonl.write_text(good + "\n" + record + "\n", encoding="utf-8")
            listed = tmp_path / f"{name}.json"
            listed.write_text("[" + good + ", " + record + "]", encoding="utf-8")
            cases += [(f"jsonl, {label} as {where}", jsonl), (f"json list, {label} as {where}", listed)]
    return cases


def test_eval_datasets_refuse_hostile_json_with_one_line(tmp_path: Path, ledger) -> None:
    cases = _eval_datasets(tmp_path)
    failures = []
    for label, path in cases:
        try:
            load_dataset(path)
            outcome, why = "crashed", "accepted"
        except OfflineAgentError as exc:
            ok = "\n" not in str(exc) and path.name in str(exc) and ("line 2" in str(exc) or "record 2" in str(exc))
            outcome, why = ("handled", "") if ok else ("crashed", str(exc)[:200])
        except BaseException as exc:  # noqa: BLE001 - a crash is what this test looks for
            outcome, why = "crashed", f"{type(exc).__name__}: {str(exc)[:200]}"
        ledger.record("data files: eval datasets", outcome)
        if outcome != "handled":
            failures.append(f"{label}: {why}")
    assert not failures, failures


def test_eval_cli_refuses_a_deep_dataset_before_loading_a_model(tmp_path: Path, ledger) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(QUESTION) + "\n" + DEEP + "\n", encoding="utf-8")
    result = cli("eval", str(path), "--limit", "1", "--out", str(tmp_path / "run"), home=tmp_path / "home")
    line = one_line_error(result)
    ledger.record("data files: eval datasets", "handled" if line else "crashed")
    assert line and "line 2: JSON nested too deeply" in line, result.stderr


def _corpus(tmp_path: Path) -> tuple[Path, int]:
    """A corpus folder with good and hostile records in JSONL and JSON files; returns it and the bad count. Each
    file's good records are its own (the same records in two files would be one document indexed once)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    bad = [
        DEEP,
        '{"id": ' + BIG + ', "text": "an id too long to read"}',
        '{"id": "n1", "text": "a field too long", "n": ' + BIG + "}",
        '{"id": "n2", "text": null}',
        '{"id": "n3", "text": "   "}',
        '{"id": "n4", "text": ' + "[" * 5000 + "]" * 5000 + "}",
    ]

    def lines(kind: str) -> list[str]:
        good = [
            json.dumps({"id": f"g{i}", "title": f"Town {i}", "text": f"Town {i} lies on the {kind} river Lunne{i}."})
            for i in range(4)
        ]
        return good[:2] + bad + good[2:]

    (folder / "records.jsonl").write_text("\n".join(lines("jsonl")) + "\n", encoding="utf-8")
    (folder / "records.json").write_text("[" + ", ".join(lines("json")) + "]", encoding="utf-8")
    keyed = "{" + ", ".join(f'"k{i}": {line}' for i, line in enumerate(lines("keyed"))) + "}"
    (folder / "keyed.json").write_text(keyed, encoding="utf-8")
    return folder, len(bad)


def test_corpus_skips_each_hostile_record_with_a_reason_and_indexes_the_rest(tmp_path: Path, ledger) -> None:
    folder, n_bad = _corpus(tmp_path)
    for name, kind in (("records.jsonl", "jsonl"), ("records.json", "json"), ("keyed.json", "keyed")):
        try:
            ingested = ingest_paths(folder / name, IngestOptions())
            texts = sorted(p.text for p in ingested.passages)
            notes = [why for _, why in ingested.notes]
            ok = texts == sorted(f"Town {i} lies on the {kind} river Lunne{i}." for i in range(4))
            ok = ok and len(notes) == n_bad
            ok = ok and all(why and "\n" not in why for why in notes)
            ok = ok and any("null" in why for why in notes) and any("too deeply" in why for why in notes)
            ledger.record("data files: corpus records", "handled" if ok else "lost")
            assert ok, (name, texts, notes)
        except OfflineAgentError as exc:  # a file-level refusal loses its good records
            ledger.record("data files: corpus records", "lost")
            pytest.fail(f"{name}: {exc}")


def test_index_cli_reports_skipped_records(tmp_path: Path, ledger) -> None:
    folder, n_bad = _corpus(tmp_path)
    result = cli("index", str(folder), "--name", "hostile", "--json", home=tmp_path / "home")
    ok = result.returncode == 0 and "Traceback" not in result.stderr
    summary = json.loads(result.stdout) if ok else {}
    ok = ok and summary["passages"] == 12 and len(summary["skipped_records"]) == 3 * n_bad
    ledger.record("data files: corpus records", "handled" if ok else "crashed")
    assert ok, result.stdout[-2000:] + result.stderr[-2000:]
    result = cli("index", str(folder), "--name", "hostile2", home=tmp_path / "home")
    assert f"{3 * n_bad} records, messages or attachments skipped in 3 files" in result.stdout


@pytest.mark.parametrize(
    ("target", "content"),
    [
        ("manifest.json", DEEP),
        ("manifest.json", '{"format": "offline-agent-bm25", "version": ' + BIG + "}"),
        ("manifest.json", "{"),
        ("manifest.json", '{"format": "offline-agent-bm25", "version": 1, "generation": "../..", "files": {}}'),
        ("manifest.json", '{"format": "offline-agent-bm25", "version": 1, "generation": "g000001", "files": []}'),
        ("meta.json", DEEP),
        ("meta.json", '{"passages": ' + BIG + "}"),
        ("files.json", DEEP),
    ],
    ids=[
        "manifest-deep",
        "manifest-bigint",
        "manifest-cut",
        "manifest-escape",
        "manifest-files",
        "meta-deep",
        "meta-bigint",
        "files-deep",
    ],  # fmt: skip
)
def test_one_damaged_index_does_not_break_the_others(
    tmp_path: Path, ledger, monkeypatch: pytest.MonkeyPatch, target: str, content: str
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(home))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Warsaw is the capital of Poland.", encoding="utf-8")
    for name in ("good", "bad"):
        build_from_paths([docs]).index.save(home / "indexes" / name)
    bad = home / "indexes" / "bad"
    where = bad / target if target == "manifest.json" else next(bad.glob("g*")) / target
    where.write_text(content, encoding="utf-8")

    rows = {row["name"]: row for row in list_indexes()}
    listed = cli("index", "list", home=home)
    good_search = cli("search", "Warsaw", "--index", "good", home=home)
    bad_search = cli("search", "Warsaw", "--index", "bad", home=home)
    ok = (
        "error" in rows["bad"]
        and "error" not in rows["good"]
        and listed.returncode == 0
        and "bad\tdamaged: " in listed.stdout
        and "good\t1 passages" in listed.stdout
        and good_search.returncode == 0
        and "Warsaw" in good_search.stdout
        and one_line_error(bad_search) is not None
        and str(bad) in one_line_error(bad_search)
    )
    ledger.record("data files: index manifest/meta", "handled" if ok else "crashed")
    assert ok, (rows, listed.stdout, listed.stderr[-500:], bad_search.stderr[-500:])


def test_run_folder_files_with_hostile_json_fail_cleanly(tmp_path: Path, ledger) -> None:
    outcomes = []
    bigint_row = '{"id": ' + BIG + "}"
    for name, content in (
        ("results.jsonl", '{"id": "q1"}\n' + DEEP + '\n{"id": "q3"}\n'),
        ("results.jsonl", '{"id": "q1"}\n' + bigint_row + '\n{"id": "q3"}\n'),
        ("results.jsonl", '{"id": "q1"}\n' + DEEP + "\n"),  # a bad last line reads as a torn write: dropped
        ("results.jsonl", '{"id": "q1"}\n' + bigint_row + "\n"),
        ("config.json", DEEP),
        ("config.json", '{"seed": ' + BIG + "}"),
    ):
        folder = tmp_path / f"run-{len(outcomes)}"
        folder.mkdir()
        (folder / name).write_text(content, encoding="utf-8")
        run = RunFolder(folder)
        torn_end = name == "results.jsonl" and content.count("\n") == 2
        try:
            rows = run.read_results() if name == "results.jsonl" else run.read_config()
            outcome = "handled" if torn_end and rows == [{"id": "q1"}] else "crashed"
        except OfflineAgentError as exc:
            outcome = "handled" if not torn_end and "\n" not in str(exc) and name in str(exc) else "crashed"
        except BaseException:  # noqa: BLE001
            outcome = "crashed"
        ledger.record("data files: run folders", outcome)
        outcomes.append((name, outcome))
    assert all(outcome == "handled" for _, outcome in outcomes), outcomes


def test_model_digest_caches_with_hostile_json_are_ignored(tmp_path: Path, ledger, monkeypatch) -> None:
    from offline_agent import models

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(home))
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + bytes(1000))
    for content in (DEEP, '{"x": ' + BIG + "}"):
        (home / "sha256-cache.json").write_text(content, encoding="utf-8")
        try:
            resolved = models.resolve_model(str(model))
            outcome = "handled" if resolved.sha256 else "crashed"
        except BaseException:  # noqa: BLE001
            outcome = "crashed"
        ledger.record("data files: model caches", outcome)
        assert outcome == "handled"


def test_a_saved_index_of_the_hostile_corpus_searches(tmp_path: Path, ledger) -> None:
    folder, _ = _corpus(tmp_path)
    index = build_from_paths([folder]).index
    index.save(tmp_path / "saved")
    hits = BM25Index.load(tmp_path / "saved").search("Lunne2 jsonl river", k=3)
    ok = hits.passages and hits.passages[0].text == "Town 2 lies on the jsonl river Lunne2."
    ledger.record("data files: corpus records", "handled" if ok else "lost")
    assert ok
