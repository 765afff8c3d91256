"""Passages tokenized while their files are read (encode.PassageEncoder, fed by ingest's on_read) build the same
index as passages tokenized after the reading, whatever the files' fate: read by workers, found duplicates, read
again at the end, or left out."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest

from offline_agent.retrieval import Analyzer, BM25Index, IngestOptions, Passage, build_from_paths
from offline_agent.retrieval.encode import PassageEncoder
from offline_agent.retrieval.ingest import _read_with, walk
from offline_agent.retrieval.parallel import read_in_processes

WORDS = ["harbour", "quay", "tide", "berth", "pilot", "ferry", "buoy", "anchor", "mooring", "rope", "Kai", "Fähre"]


def _arrays(index: BM25Index) -> dict[str, list]:
    """Everything a search reads, as plain lists: equal dicts mean equal indexes."""
    postings = index._postings
    out = {name: np.asarray(getattr(postings, name)).tolist() for name in ("offsets", "docs", "tf", "weights", "idf")}
    out["vocab"] = postings.vocab.tolist()
    out["dl"] = np.asarray(index._t["dl"]).tolist()
    out["texts"] = [index.passage(int(i)).text for i in index.ids()]
    return out


def _folder(root: Path, files: int, words: int) -> Path:
    for n in range(files):
        body = "\n\n".join(
            f"## Part {k}\n\n" + " ".join(WORDS[(n * 7 + k + i) % len(WORDS)] for i in range(words)) + "."
            for k in range(12)
        )
        (root / f"f{n:02d}.md").write_text(f"# File {n}\n\n{body}\n", encoding="utf-8")
    (root / "same.md").write_text((root / "f01.md").read_text(encoding="utf-8"), encoding="utf-8")  # a duplicate
    (root / "_sources").mkdir()
    (root / "_sources" / "gone.rst.txt").write_text("Gone\n====\n\nIts page is not here.\n")  # read again at the end
    return root


@pytest.mark.parametrize(("files", "words", "workers"), [(4, 300, 1), (12, 2600, 2)])
def test_a_folder_indexes_as_its_passages_do(tmp_path: Path, files: int, words: int, workers: int) -> None:
    folder = _folder(tmp_path, files, words)
    entries, _ = walk([folder])
    pooled = read_in_processes([(e, True) for e in entries], functools.partial(_read_with, IngestOptions()), workers)
    assert (pooled is not None) == (workers > 1)  # the second folder is large enough for the worker processes
    report = build_from_paths([folder], workers=workers)
    assert report.ingested.duplicates and any(p.title == "Gone" for p in report.ingested.passages)
    after = BM25Index.build(report.ingested.passages)
    assert _arrays(report.index) == _arrays(after)


def _passages(source: str, texts: list[str], title: str = "") -> list[Passage]:
    return [Passage(i, source, title, text, source, 0, len(text)) for i, text in enumerate(texts)]


def test_passages_left_out_added_late_or_cut_differently_still_index_as_they_are() -> None:
    a = _passages("a.md", ["The quay is long.", "Ferries berth at the quay."], title="Quay")
    b = _passages("b.md", ["Pilots board at the buoy."])
    c = _passages("c.md", ["Die Fähre legt am Kai an.", "Mooring ropes.", "Tide tables."])
    encoder = PassageEncoder(Analyzer(), batch=2)  # a batch boundary falls inside the files
    for source, passages in (("a.md", a), ("b.md", b), ("c.md", c)):
        encoder.add(source, passages)
    late = _passages("d.md", ["The anchor held."])
    for wanted in ([*c, *a], [*a, *late, *c], [*a, *c[:2]], [*late]):  # b left out; d never added; c cut short
        numbered = [dataclasses.replace(p, id=i) for i, p in enumerate(wanted)]
        built = BM25Index.build(numbered, encoded=encoder.encoded(numbered))
        assert _arrays(built) == _arrays(BM25Index.build(numbered))


def test_postings_made_for_other_passages_or_another_analyzer_are_refused() -> None:
    passages = _passages("a.md", ["The quay is long.", "Ferries berth at the quay."])
    encoder = PassageEncoder(Analyzer())
    encoder.add("a.md", passages)
    with pytest.raises(ValueError, match="for 2 passages, not the 1 given"):
        BM25Index.build(passages[:1], encoded=encoder.encoded(passages))
    with pytest.raises(ValueError, match="another analyzer"):
        BM25Index.build(passages, analyzer=Analyzer(lowercase=False), encoded=encoder.encoded(passages))


def test_a_file_too_large_to_tokenize_as_it_arrives_is_tokenized_by_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    from offline_agent.retrieval import encode

    monkeypatch.setattr(encode, "BATCH", 4)  # 8 batches of 4 make "large": the worker processes are used
    big = _passages("big.jsonl", [f"Record {n}: the {WORDS[n % len(WORDS)]} at berth {n % 7}." for n in range(40)])
    small = _passages("small.md", ["The pilot boards at the buoy."])
    calls = []
    real = encode.encode_texts

    def encode_texts(texts, coder, **kwargs):
        calls.append((len(texts), kwargs["workers"]))
        return real(texts, coder, **kwargs)

    monkeypatch.setattr(encode, "encode_texts", encode_texts)
    encoder = PassageEncoder(Analyzer(), workers=2)
    encoder.add("big.jsonl", big)
    encoder.add("small.md", small)
    numbered = [dataclasses.replace(p, id=i) for i, p in enumerate([*small, *big])]
    assert encode.spread(len(big), 2) and not encode.spread(len(big), 1)
    built = BM25Index.build(numbered, encoded=encoder.encoded(numbered))
    assert calls == [(40, 2)]  # the large file, in two worker processes; the small one as it arrived
    assert _arrays(built) == _arrays(BM25Index.build(numbered))


def test_passages_given_again_replace_those_given_before() -> None:
    # A page read again with other boilerplate left out (catalog.py): as many passages, other words.
    first = _passages("a.md", ["The quay is long. Footer of the port.", "Ferries berth."])
    again = _passages("a.md", ["The quay is long.", "Ferries berth."])
    b = _passages("b.md", ["Pilots board at the buoy."])
    for batch in (1, 2, 8):  # given again after its first passages were tokenized, or while they wait
        encoder = PassageEncoder(Analyzer(), batch=batch)
        encoder.add("a.md", first)
        encoder.add("b.md", b)
        encoder.add("a.md", again)
        wanted = [dataclasses.replace(p, id=i) for i, p in enumerate([*again, *b])]
        built = BM25Index.build(wanted, encoded=encoder.encoded(wanted))
        assert _arrays(built) == _arrays(BM25Index.build(wanted))
