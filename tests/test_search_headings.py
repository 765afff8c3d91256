"""What the search tool shows the model about where a passage sits: `[k] Title > Section: text` where the passage
has a heading path beyond its document's title, and exactly what it showed before heading paths were kept where
it has none (JSONL records, a Markdown file whose only heading is its title); checked on written-out Observations,
on the sample corpus, and on the HotpotQA pool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, need_shared_data

from offline_agent.grounding import Grounding
from offline_agent.retrieval import open_corpus
from offline_agent.retrieval.passages import heading_beyond_title
from offline_agent.tools.corpus import CorpusSession, SearchSettings, SearchTool, unnumbered

PAGES = ROOT / "tests" / "retrieval" / "html_pages"


def observation(index, query: str, question: str | None = None, **settings) -> str:
    """What a search for `query` shows, in a run whose question is `question` (the query itself by default)."""
    return SearchTool(CorpusSession(index, SearchSettings(**settings), question=question or query))(query)


def berths_and_records(tmp_path: Path, *rows: dict[str, str]) -> tuple[object, object]:
    """The index of a manual page of reference entries (tests/retrieval/html_pages/reference.html) and the index
    of JSONL records `rows`, written under `tmp_path`."""
    (tmp_path / "manual").mkdir()
    (tmp_path / "manual" / "berths.html").write_bytes((PAGES / "reference.html").read_bytes())
    (tmp_path / "pool.jsonl").write_text("\n".join(json.dumps(row) for row in rows))
    return open_corpus(tmp_path / "manual"), open_corpus(tmp_path / "pool.jsonl")


def test_records_and_title_only_markdown_show_as_before(tmp_path: Path) -> None:
    rows = [
        {"id": "1", "title": "Kessa Harbour", "text": "Kessa Harbour is a fishing port. Its quay is 200 metres long."},
        {"id": "2", "title": "Orla", "text": "Orla is an island reached by ferry from Kessa."},
    ]
    (tmp_path / "pool.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ferry.md").write_text("# Orla Ferry\n\nThe Orla ferry leaves Kessa at nine.\n")
    # Written out as the search showed them before heading paths existed: "[k] Title: text", nothing else.
    assert observation(open_corpus(tmp_path / "pool.jsonl"), "Kessa quay ferry") == (
        "[1] Orla: Orla is an island reached by ferry from Kessa.\n"
        "[2] Kessa Harbour: Kessa Harbour is a fishing port. Its quay is 200 metres long."
    )
    assert observation(open_corpus(tmp_path / "docs"), "Orla ferry") == (
        "[1] Orla Ferry: The Orla ferry leaves Kessa at nine."
    )
    assert observation(open_corpus(tmp_path / "docs"), "Orla ferry", snippet="sentences") == (
        "[1] Orla Ferry: The Orla ferry leaves Kessa at nine."
    )


def test_a_manual_page_shows_the_section_path_after_its_title(tmp_path: Path) -> None:
    (tmp_path / "tides.html").write_bytes((PAGES / "sphinx.html").read_bytes())
    (tmp_path / "rope.html").write_bytes((PAGES / "docbook.html").read_bytes())
    index = open_corpus(tmp_path)
    assert observation(index, "spring tides full moon range", k=1) == (
        "[1] Tide Tables > Reading a table > Spring tides: Spring tides come two days after a full or "
        "new moon. Their range reaches 4.2 metres."
    )
    # the page's own heading is the title and is not repeated in the label, and a passage that opens with it shows
    # it (less its section number); a section's heading below the title is in the label, and its passage opens
    # after it
    assert observation(index, "bollards berth", k=1).startswith("[1] Mooring Lines: Mooring Lines Every berth ")
    assert observation(index, "frayed lines millimetres", k=1).startswith("[1] Mooring Lines > Rope: Lines must ")


@pytest.mark.parametrize("snippet", ["head", "sentences"])
def test_section_numbers_are_neither_shown_nor_answers(tmp_path: Path, snippet: str) -> None:
    """A model asked for a number wrote the section number nearest to it: the PostgreSQL manual's "20.3.1" for the
    reserved connection slots, "49.2" for the same question on another page, "20.3.1" for a socket's permissions.
    Headings lose their numbers of two levels or more in what the model reads, so they cannot be grounded answers;
    the numbers in the text itself stay, and one level is kept ("1. FC Köln" is a name)."""
    (tmp_path / "rope.html").write_bytes((PAGES / "docbook.html").read_bytes())
    (tmp_path / "club.md").write_text("# 1. FC Köln\n\n1. FC Köln is a football club founded in 1948.\n")
    index = open_corpus(tmp_path)
    question = "How thick must mooring lines be, in millimetres?"
    shown = observation(index, question, k=1, snippet=snippet)
    assert "4.2" not in shown.split(" Table 4.1.")[0] and "16 millimetres" in shown
    grounding = Grounding([question, shown])
    assert grounding.accepts("16 millimetres") and not grounding.accepts("4.2.1") and not grounding.accepts("4.2")
    assert observation(index, "football club founded", k=1, snippet=snippet).startswith("[1] 1. FC Köln: 1. FC Köln is")
    # the first entry of a section: its passage opens with the page's heading and the section's (they hold no text
    # of their own), then the entry's term; the label shows all three without numbers, and the text opens after them
    (tmp_path / "berths.html").write_bytes((PAGES / "reference.html").read_bytes())
    shown = observation(open_corpus(tmp_path / "berths.html"), "marina size boats", k=1, snippet=snippet)
    assert shown.startswith("[1] Berth Settings > Sizes > max_berths (integer): Sets the size of the marina.")
    assert "5.3" not in shown
    assert unnumbered("20.3.1. Connection Settings") == "Connection Settings" == unnumbered("Connection Settings")
    assert unnumbered("F.3. auth_delay") == "auth_delay"
    assert unnumbered("3.11.2 Documentation") == "3.11.2 Documentation"  # a version, not a section number


def test_the_sample_corpus_has_no_heading_beyond_its_titles() -> None:
    index = open_corpus(ROOT / "corpora" / "sample" / "docs")
    passages = [index.passage(int(i)) for i in index.ids()]
    assert passages and all(not heading_beyond_title(p.heading, p.title) for p in passages)


def test_the_hotpotqa_pool_shared_data_has_no_heading_paths() -> None:
    index = open_corpus(need_shared_data("hotpotqa", "hotpot_pool5716_corpus.jsonl"))
    passages = [index.passage(int(i)) for i in index.ids()]
    assert len(passages) > 5000 and all(p.heading == () and p.line == 0 for p in passages)


@pytest.mark.parametrize("links", [0, 2])
def test_linked_documents_use_the_same_label(tmp_path: Path, links: int) -> None:
    rows = [
        {"id": "1", "title": "Kessa", "text": "Kessa is a port. The Orla ferry calls there."},
        {"id": "2", "title": "Orla ferry", "text": "The Orla ferry is a small boat."},
    ]
    (tmp_path / "pool.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    text = observation(open_corpus(tmp_path / "pool.jsonl"), "Kessa port", k=1, links=links)
    assert text.splitlines()[0] == "[1] Kessa: Kessa is a port. The Orla ferry calls there."


def test_a_section_of_a_manual_shows_the_sentence_after_its_best_one(tmp_path: Path) -> None:
    """`section_sentences_after`: a passage below its document's title (a manual's section) shows the sentence after
    each best one, where reference text gives the value ("... The default is 1000 tuples."); a record shows as
    before, as does every passage with the option at 0."""
    manual, pool = berths_and_records(
        tmp_path,
        {
            "id": "1",
            "title": "Rope",
            "text": "Rope is strands. Lines must be 16 millimetres thick. A boat may be refused.",
        },
        {"id": "2", "title": "Chain", "text": "Chain is links of metal. It is heavy."},
        {"id": "3", "title": "Anchor", "text": "An anchor holds a boat. It has flukes."},
    )
    settings = {"k": 1, "snippet": "sentences", "sentences": 2}
    entry = "[1] Berth Settings > Sizes > max_berths (integer): Sets the size of the marina. It says how many boats"
    query = "how many boats moored at once"
    assert observation(manual, query, **settings, section_sentences_after=1) == (
        f"{entry} may be moored at once. The default is 40 boats."
    )
    assert observation(manual, query, **settings) == f"{entry} may be moored at once."
    query = "lines thick millimetres"
    record = "[1] Rope: Rope is strands. Lines must be 16 millimetres thick."
    assert (
        observation(pool, query, **settings, section_sentences_after=1)
        == record
        == observation(pool, query, **settings)
    )


def test_a_section_of_a_manual_shows_at_least_section_sentences(tmp_path: Path) -> None:
    """`section_sentences`: a passage below its document's title shows at least that many sentences, where a
    reference entry's short "The default is 40 boats." shares no word with the query and loses to longer ones; a
    record shows its `sentences` as before."""
    rope = {"id": "1", "title": "Rope", "text": "Rope is strands. Lines must be 16 mm thick. A boat is refused."}
    manual, pool = berths_and_records(tmp_path, rope)
    settings = {"k": 1, "snippet": "sentences", "sentences": 2}
    entry = "[1] Berth Settings > Sizes > max_berths (integer): Sets the size of the marina. It says how many boats"
    query = "boats moored bollards"
    assert observation(manual, query, **settings) == f"{entry} may be moored at once."
    assert observation(manual, query, **settings, section_sentences=3) == (
        f"{entry} may be moored at once. The default is 40 boats."
    )
    assert observation(manual, query, **settings, section_sentences=1) == f"{entry} may be moored at once."  # at least
    query = "lines thick refused boat"
    record = "[1] Rope: Rope is strands. Lines must be 16 mm thick."  # 2 of its 3 sentences
    assert observation(pool, query, **settings, section_sentences=3) == record == observation(pool, query, **settings)


@pytest.mark.parametrize(
    "section",
    [
        "## Sizes\n\nBoats up to 12 metres may berth.",
        "## Sizes ##\n\nBoats up to 12 metres may berth.",  # closing hashes
        "Sizes\n-----\n\nBoats up to 12 metres may berth.",  # an underlined heading
    ],
)
def test_a_markdown_sections_heading_line_is_shown_in_its_label_only(tmp_path: Path, section: str) -> None:
    (tmp_path / "manual").mkdir()
    (tmp_path / "manual" / "berths.md").write_text(f"# Berths\n\nThe berths of the marina.\n\n{section}\n")
    manual = open_corpus(tmp_path / "manual")
    for snippet in ("head", "sentences"):
        shown = observation(manual, "boats metres berth sizes", k=1, snippet=snippet)
        assert shown == "[1] Berths > Sizes: Boats up to 12 metres may berth."


def test_with_question_ranks_a_manual_by_the_query_and_the_question(tmp_path: Path) -> None:
    """`with_question`: where the query finds a passage in a section below its document's title, the question's
    words rank the passages too (a small model's keywords miss the words the entry writes); the label and the
    sentences shown still go by the query. Records are ranked by the query alone: there the question's words
    ("town", "born") only find more records of the kind asked for."""
    (tmp_path / "manual").mkdir()
    (tmp_path / "manual" / "berths.html").write_bytes((PAGES / "reference.html").read_bytes())
    manual = open_corpus(tmp_path / "manual")
    question = "Above what wind speed does the office close the berths unless told otherwise?"
    wind = "[1] Berth Settings > Sizes > -w knots --wind=knots: Closes the berths above this wind speed."
    for query in ("berth setting", "berth limit"):
        assert not observation(manual, query, k=1, question=question).startswith(wind)
        assert observation(manual, query, k=1, question=question, with_question=True).startswith(wind)
    rows = [
        {"id": "1", "title": "Ansel Varo", "text": "Ansel Varo was a painter born in Kessa, a harbour town."},
        {"id": "2", "title": "Lira Dune", "text": "Lira Dune was a painter born in Orla, a town on an island."},
        {"id": "3", "title": "Harbour Light", "text": "Harbour Light is a painting by Ansel Varo."},
    ]
    (tmp_path / "pool.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    pool = open_corpus(tmp_path / "pool.jsonl")
    question = "In which town was the painter of Harbour Light born?"
    assert observation(pool, "Harbour Light", k=2, question=question, with_question=True) == observation(
        pool, "Harbour Light", k=2, question=question
    )


PG_MANUAL = Path("/usr/share/doc/postgresql-doc-15/html")


@pytest.fixture(scope="module")
def pg_manual():
    if not PG_MANUAL.is_dir():
        pytest.skip("postgresql-doc-15 is not installed (scripts/install.sh installs it where it can)")
    return open_corpus(PG_MANUAL)


@pytest.mark.parametrize(
    ("question", "query", "value"),
    [
        # pgdocs pg003, pg006 and pg013 with the model's own first searches: the entry was found at the top, and
        # its value sentence was not among the two shown (all three right in the run with it).
        ("Which elliptic curve does the server use for ECDH key exchange unless I configure another one?",
         "Elliptic curve ECDH", "The default is prime256v1."),
        ("As long as WAL disk usage stays below what amount, by default, are old WAL files always recycled?",
         "WAL disk usage threshold", "The default is 80 MB."),
        ("How much memory can logical decoding use by default before it starts writing decoded changes to disk?",
         "logical decoding memory limit", "It defaults to 64 megabytes (64MB)."),
    ],
)  # fmt: skip
def test_a_manual_entry_shows_its_value_sentence_with_three_sentences(pg_manual, question, query, value) -> None:
    def shown(count: int) -> str:
        settings = SearchSettings(k=4, snippet="sentences", sentences=2, section_sentences_after=1,
                                  section_sentences=count)  # fmt: skip
        return SearchTool(CorpusSession(pg_manual, settings, question=question))(query)

    assert value not in shown(0)
    assert value in shown(3).splitlines()[0]


@pytest.mark.parametrize(
    ("question", "query", "value"),
    [
        # pgdocs pg004, pg012 and pg014 with the model's own first searches: the entry was found, and the sentence
        # that says its default was not among those shown (replayed, the three runs' Observations then hold the
        # answer; docs/results/2026-12.md, stop 65).
        ("When a standby can't get WAL from streaming, pg_wal or the archive, how long does it wait before trying "
         "again by default?", "standby WAL wait time", "The default value is 5 seconds."),
        ("Which JIT provider library does the server load by default?", "default JIT provider library",
         "The default is llvmjit."),
        ("With the logging collector on, at what file size does PostgreSQL start a new log file by default?",
         "PostgreSQL log file size", "The default is 10 megabytes."),
    ],
)  # fmt: skip
def test_a_manual_entry_shows_the_sentence_that_says_its_default(pg_manual, question, query, value) -> None:
    settings = {"k": 4, "snippet": "sentences", "sentences": 2, "section_sentences_after": 1, "section_sentences": 3,
                "with_question": True}  # fmt: skip
    assert value not in observation(pg_manual, query, question, **settings)
    assert value in observation(pg_manual, query, question, **settings, section_defaults=True)


def test_section_defaults_shows_a_sections_default_sentences_and_leaves_records_alone(tmp_path: Path) -> None:
    """`section_defaults`: a passage below its document's title also shows every sentence that says "default",
    whatever the query; a record shows its `sentences` as before, though one of its sentences says it."""
    manual, pool = berths_and_records(
        tmp_path,
        {"id": "1", "title": "Rope", "text": "Rope is strands. By default lines are 16 mm thick. A boat is refused."},
        {"id": "2", "title": "Anchor", "text": "An anchor holds a ship. It has flukes."},
        {"id": "3", "title": "Chain", "text": "Chain is links of metal. It is heavy."},
    )
    settings = {"k": 1, "snippet": "sentences", "sentences": 2}
    entry = "[1] Berth Settings > Sizes > max_berths (integer): Sets the size of the marina."
    query = "bollards two each berth"
    assert observation(manual, query, **settings) == (
        f"{entry} ... Raising it also needs more bollards, two for each berth."
    )
    assert observation(manual, query, **settings, section_defaults=True) == (
        f"{entry} ... The default is 40 boats. Raising it also needs more bollards, two for each berth."
    )
    query = "boat refused"
    record = "[1] Rope: Rope is strands. ... A boat is refused."
    assert observation(pool, query, **settings, section_defaults=True) == record == observation(pool, query, **settings)


def test_the_sentences_shown_do_not_depend_on_the_hash_seed() -> None:
    """Sentences of equal weight were ranked by a float sum taken in a set's order, and a set's order changes with
    Python's hash seed: 0.1 + 0.2 + 0.3 is 0.6 in one order and 0.6000000000000001 in another, so the same
    question read different Observations in two runs (two of the HotpotQA dev questions did). Each seed runs in a
    process of its own."""
    code = (
        "from types import SimpleNamespace\n"
        "from offline_agent.retrieval.analyzer import Analyzer\n"
        "from offline_agent.tools.corpus import _best_sentences\n"
        "text = 'Opening line here. Alpha beta gamma. Zeta eta theta iota kappa. "
        "Gamma beta alpha xi omicron pi rho sigma tau upsilon phi chi psi omega.'\n"
        "weights = {'alpha': 0.1, 'beta': 0.2, 'gamma': 0.3}\n"
        "print(_best_sentences(SimpleNamespace(text=text, title='', heading=()), weights, 2, Analyzer()))\n"
    )
    shown = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        for seed in range(12)
    }
    assert shown == {"Opening line here. Alpha beta gamma.\n"}  # a tie keeps the earlier sentence


def test_a_long_entry_is_found_by_its_name_in_every_passage(tmp_path: Path) -> None:
    """A passage is indexed with its headings below the title: a long reference entry's later passages hold no
    name of the entry in their text, and a search for the name with a word of a later passage found none."""
    rules = " ".join(f"<p>Rule {n} is kept by the harbour staff on duty.</p>" for n in range(40))
    page = (
        "<html><head><title>Harbour Settings</title></head><body><h1>Harbour Settings</h1><h2>Limits</h2><dl>"
        f"<dt>quay_curfew (integer)</dt><dd><p>Sets the hour the gates close.</p>{rules}"
        "<p>A bell rings at ten.</p></dd>"
        "<dt>quay_depth (integer)</dt><dd><p>Sets the depth at low water. A bell buoy marks the channel.</p></dd>"
        "</dl></body></html>"
    )
    (tmp_path / "quay.html").write_text(page)
    index = open_corpus(tmp_path)
    passages = [index.passage(int(i)) for i in index.ids()]
    entry = [p for p in passages if p.heading[-1:] == ("quay_curfew (integer)",)]
    assert len(entry) >= 2 and "curfew" not in entry[-1].text and "bell" in entry[-1].text
    shown = observation(index, "quay_curfew bell ten", k=1, snippet="sentences", sentences=2)
    assert shown.startswith("[1] Harbour Settings > Limits > quay_curfew (integer): ") and "A bell rings" in shown


def test_a_passage_loses_only_headings_that_stand_on_their_own_line() -> None:
    """The search takes off the headings a passage opens with where its label shows them, but not a sentence that
    opens with a heading's words (the PostgreSQL manual's "gssencmode is ignored for Unix domain socket
    communication." under the entry "gssencmode", and "Options for Windows" under "Options")."""
    from types import SimpleNamespace

    from offline_agent.tools.corpus import _opening

    def opening(text: str, *heading: str) -> str:
        return _opening(SimpleNamespace(title="libpq", heading=("libpq", *heading)), text)

    assert opening("gssencmode\n\nSets the mode.", "Parameters", "gssencmode") == "Sets the mode."
    sentence = "gssencmode is ignored for Unix domain socket communication."
    assert opening(sentence, "Parameters", "gssencmode") == sentence
    assert opening("Options for Windows\n\n-e source\n\nNames the source.", "Options", "-e source") == (
        "Options for Windows\n\n-e source\n\nNames the source."
    )
    assert opening("20.3.1. Options\n\n-e source\n\nNames it.", "20.3.1. Options", "-e source") == "Names it."


@pytest.mark.parametrize(
    ("question", "query", "answer"),
    [
        # pgdocs pg039, pg040, pg043 and pg055 with the model's own first searches: the answer (or, for the
        # bridge, the next hop) is among the four passages shown only with the question's words (all four wrong
        # in the run without them, right in the run with them).
        ("Which signal does pg_promote send to the postmaster when it is called with wait set to false?",
         "pg_promote signal", "SIGUSR1"),
        ("Which process restarts the WAL archiver when archive_library is changed?",
         "WAL archiver process", "postmaster"),
        ("Logical replication workers are taken from a pool that another server parameter defines. What is that "
         "parameter's default?", "server parameter", "max_worker_processes"),
        ("recovery_target_lsn is parsed with a system data type. Internally, what kind of integer is a value of "
         "that type?", "system data type", "64-bit integer"),
    ],
)  # fmt: skip
def test_a_manual_search_finds_the_entry_with_the_questions_words(pg_manual, question, query, answer) -> None:
    def shown(with_question: bool) -> str:
        settings = SearchSettings(k=4, snippet="sentences", sentences=2, section_sentences_after=1,
                                  section_sentences=3, with_question=with_question)  # fmt: skip
        return SearchTool(CorpusSession(pg_manual, settings, question=question))(query)

    assert answer not in shown(False)
    assert answer in shown(True)
