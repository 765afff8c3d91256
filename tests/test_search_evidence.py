"""What a search shows: linked documents (titles a passage names), sentence snippets weighed by idf, and the
title table's name lookups; over the tiny corpus and small in-test corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline_agent.errors import ConfigError
from offline_agent.retrieval import open_corpus
from offline_agent.tools.corpus import CorpusSession, SearchSettings, SearchTool
from offline_agent.tools.titles import bare_title, place_name, title_table


def search_tool(index, question: str = "", **settings) -> SearchTool:
    return SearchTool(CorpusSession(index, SearchSettings(**settings), question=question))


def titled_corpus(path: Path, records: list[tuple[str, str]]):
    """The index of a JSONL corpus written to `path` from (title, text) pairs."""
    lines = [json.dumps({"id": str(n), "title": title, "text": text}) for n, (title, text) in enumerate(records)]
    path.write_text("\n".join(lines), encoding="utf-8")
    return open_corpus(path)


@pytest.fixture
def linked_index(tmp_path: Path):
    records = [
        {
            "id": "a",
            "title": "Kiss and Tell (1945 film)",
            "text": "Kiss and Tell is a 1945 comedy film starring "
            "Shirley Temple as Corliss Archer. It was directed by Richard Wallace.",
        },
        {
            "id": "b",
            "title": "Shirley Temple",
            "text": "Shirley Temple Black was an American actress. She was a "
            "child star of the 1930s. As an adult, she served as Chief of Protocol of the United States.",
        },
        {"id": "c", "title": "Richard Wallace (director)", "text": "Richard Wallace was an American film director."},
        {"id": "d", "title": "forum", "text": "A forum is a meeting place. Kiss and Tell was discussed there."},
        {"id": "e", "title": "Tell", "text": "Tell is a short word. It names nothing here."},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records), encoding="utf-8")
    return open_corpus(path)


def test_bare_title_drops_only_a_closing_qualifier() -> None:
    assert bare_title("Kiss and Tell (1945 film)") == "Kiss and Tell"
    assert bare_title("Shirley Temple") == "Shirley Temple"
    assert bare_title("(band)") == "(band)"


def test_mentions_follow_names_as_written_in_order(linked_index) -> None:
    table = title_table(linked_index)
    text = "Kiss and Tell is a 1945 comedy film starring Shirley Temple as Corliss Archer, with Richard Wallace."
    titles = [title for _, title in table.mentions(text)]
    # A lower-case title ("forum") never links, nor one inside a longer name ("Tell" in "Kiss and Tell"); a
    # qualifier does not have to be written.
    assert titles == ["Kiss and Tell (1945 film)", "Shirley Temple", "Richard Wallace (director)"]
    assert [t for _, t in table.mentions(text, exclude={"Shirley Temple"})][1] == "Richard Wallace (director)"
    assert table.mentions("shirley temple, in lower case, is not her name as written") == []
    assert [t for _, t in table.mentions('He met "Shirley Temple."')] == ["Shirley Temple"]
    assert [t for _, t in table.mentions("It was Shirley Temple's first film.")] == ["Shirley Temple"]
    assert [t for _, t in table.mentions("It was Shirley Temple’s.")] == ["Shirley Temple"]
    assert [t for _, t in table.mentions("Tell me more.")] == ["Tell"]
    assert table.mentions("") == []


def test_named_finds_a_document_by_its_bare_title(linked_index) -> None:
    table = title_table(linked_index)
    assert [title for _, title in table.named("Kiss and Tell")] == ["Kiss and Tell (1945 film)"]
    assert table.named("Kiss") == [] and table.named("shirley temple") == []


@pytest.fixture
def place_index(tmp_path: Path):
    """Places titled as an encyclopedia titles them, with their region after a comma, beside titles with commas
    that are not places and a place that has a title of its own."""
    records = [
        ("Zelazowa Wola, Masovian Voivodeship", "Zelazowa Wola is a village in Sochaczew County in central Poland."),
        ("Sochaczew County", "Sochaczew County is a county in the Masovian Voivodeship of Poland."),
        ("Yes, Yes, Yes", "Yes, Yes, Yes is a song of three words."),
        ("Marion", "Marion is a given name."),
        ("Marion, Arkansas", "Marion is a city in Crittenden County, Arkansas."),
    ]
    return titled_corpus(tmp_path / "places.jsonl", records)


def test_a_place_name_is_a_title_without_its_region() -> None:
    assert place_name("McLean, Virginia") == "McLean"
    assert place_name("Sullivan County, New Hampshire") == "Sullivan County"
    assert place_name("Springfield, Illinois (band)") == "Springfield"  # a closing qualifier aside
    assert place_name("Yes, Yes, Yes") is None  # a second comma: a name, not a place and region
    assert place_name("Crowds, old and new") is None  # no capital: not a region
    assert place_name("Marion") is None and place_name("New York, New York") is None


def test_a_place_lookup_finds_a_title_with_a_region_only_where_no_title_is_the_name(place_index) -> None:
    table = title_table(place_index)
    assert table.named("Zelazowa Wola") == []
    assert [title for _, title in table.named("Zelazowa Wola", place=True)] == ["Zelazowa Wola, Masovian Voivodeship"]
    assert [title for _, title in table.named("Marion", place=True)] == ["Marion"]  # its own title wins
    assert table.named("Yes", place=True) == []
    tool = search_tool(place_index, k=2)
    assert tool.definition("Zelazowa Wola") is None
    assert tool.definition("Zelazowa Wola", place=True) == (
        "Zelazowa Wola is a village in Sochaczew County in central Poland."
    )
    shown = tool.open_named("Zelazowa Wola", place=True)
    assert shown is not None and shown.text.startswith("[1] Zelazowa Wola, Masovian Voivodeship: ")
    assert shown.titles == ["Zelazowa Wola, Masovian Voivodeship"]


def test_a_search_shows_the_documents_its_passages_name(linked_index) -> None:
    tool = search_tool(linked_index, k=1, links=2)
    text = tool("Kiss and Tell film")
    lines = text.splitlines()
    assert lines[0].startswith("[1] Kiss and Tell (1945 film): ")
    assert lines[1].startswith("[2] Shirley Temple: ") and lines[2].startswith("[3] Richard Wallace (director): ")
    assert tool.last_details["titles"] == ["Kiss and Tell (1945 film)", "Shirley Temple", "Richard Wallace (director)"]
    assert tool.last_details["links"] == ["Shirley Temple", "Richard Wallace (director)"]
    assert tool.last_details["scores"][1:] == [None, None]
    assert len(search_tool(linked_index, k=1, links=1)("Kiss and Tell film").splitlines()) == 2
    assert len(search_tool(linked_index, k=1)("Kiss and Tell film").splitlines()) == 1  # off by default


@pytest.fixture
def short_index(tmp_path: Path):
    """Documents with titles shorter than four characters: a city, a mountain, a number, a common word."""
    records = [
        ("Albert Einstein", "Albert Einstein was born in 1879 in Ulm, in the Kingdom of Württemberg."),
        ("Ulm", "Ulm is a city in Germany, on the river Danube."),
        ("K2", "K2 is the second-highest mountain on Earth."),
        ("17 (album)", "17 is an album of seventeen songs."),
        ("Oak", "Oak is a tree of the beech family."),
    ]
    return titled_corpus(tmp_path / "short.jsonl", records)


def test_a_short_title_links_where_it_is_written_as_a_name_of_its_own(short_index) -> None:
    table = title_table(short_index)

    def names(text: str) -> list[str]:
        return [title for _, title in table.mentions(text)]

    assert names('He was born in Ulm, Germany, and climbed "K2" twice.') == ["Ulm", "K2"]
    assert names("Ulm is a city. K2 is high.") == []  # a sentence's first word
    assert names('the Ulm Minster, New Ulm, "New Ulm" and Oak Ridge') == []  # part of a longer name
    assert names("He counted 17 of them.") == []  # a number alone
    assert [title for _, title in table.named("Ulm")] == ["Ulm"] and table.named("17") == []


def test_a_search_shows_a_short_titled_document_its_passage_names(short_index) -> None:
    tool = search_tool(short_index, k=1, links=2)
    lines = tool("Albert Einstein").splitlines()
    assert lines[0].startswith("[1] Albert Einstein: ") and lines[1].startswith("[2] Ulm: ")
    assert tool.last_details["links"] == ["Ulm"]


def test_sentence_snippets_keep_the_first_and_the_sentence_that_weighs_most(linked_index) -> None:
    question = "What government position was held by the woman who portrayed Corliss Archer?"
    tool = search_tool(linked_index, question, k=1, snippet="sentences", sentences=2)
    text = tool("Shirley Temple protocol")
    assert text == (
        "[1] Shirley Temple: Shirley Temple Black was an American actress. ... As an adult, she served as Chief of "
        "Protocol of the United States."
    )


def test_sentence_snippets_can_show_what_follows_the_best_sentence(tmp_path: Path) -> None:
    # A manual states a setting in one sentence and its default in the short one after it.
    text = (
        "These settings control connections. The max_slots setting keeps slots for administrators. "
        "The default is three. Changing it needs a restart. Other settings follow."
    )
    others = [("Logging", "Logs go to stderr."), ("Memory", "Buffers hold pages."), ("Vacuum", "Vacuum frees rows.")]
    index = titled_corpus(tmp_path / "manual.jsonl", [("Connection Settings", text), *others])
    question = "How many slots does max_slots keep for administrators?"
    shown = {
        after: search_tool(index, question, k=1, snippet="sentences", sentences=2, sentences_after=after)(
            "max_slots administrators"
        )
        for after in (0, 1)
    }
    opening = "[1] Connection Settings: These settings control connections. The max_slots setting keeps slots for"
    assert shown[0] == f"{opening} administrators."
    assert shown[1] == f"{opening} administrators. The default is three."


def test_open_named_shows_the_document_an_answer_names(linked_index) -> None:
    tool = search_tool(linked_index, k=3)
    shown = tool.open_named("Shirley Temple")
    assert shown is not None and shown.text.startswith("[1] Shirley Temple: ")
    assert shown.titles == tool.last_details["titles"] == ["Shirley Temple"]
    assert shown.ids == tool.last_details["ids"] and shown.scores == [None]
    assert tool.open_named("Shirley Temple", exclude={"Shirley Temple"}) is None
    assert tool.open_named("Nobody Known") is None


def test_open_found_shows_what_a_search_for_a_whole_text_finds_less_what_was_read(linked_index) -> None:
    tool = search_tool(linked_index, k=2)
    question = "What government position was held by Shirley Temple as an adult?"
    shown = tool.open_found(question)
    assert shown is not None and shown.text.startswith("[1] Shirley Temple: ")
    assert shown.titles[0] == "Shirley Temple" and all(score is not None for score in shown.scores)
    others = tool.open_found(question, exclude={"Shirley Temple"})
    assert others is not None and "Shirley Temple:" not in others.text  # the documents the run has read are left out
    every = {"Kiss and Tell (1945 film)", "Shirley Temple", "Richard Wallace (director)", "forum", "Tell"}
    assert tool.open_found(question, exclude=every) is None


@pytest.mark.parametrize(
    "settings",
    [
        {"links": -1},
        {"links": 21},
        {"sentences": 0},
        {"k": 0},
        {"sentences_after": -1},
        {"sentences_after": 6},
        {"section_sentences_after": 6},
        {"section_sentences": -1},
        {"section_sentences": 21},
    ],
)
def test_bad_search_settings_are_refused(settings) -> None:
    with pytest.raises(ConfigError) as caught:
        SearchSettings(**settings)
    assert "must be between" in str(caught.value) and "\n" not in str(caught.value)


def test_term_idf_is_zero_for_unknown_terms(tiny_index) -> None:
    weights = tiny_index.term_idf(["gdansk", "zanzibar"])
    assert weights["zanzibar"] == 0.0 and weights["gdansk"] > 0.0
