"""A bare number answered with the unit of measure the text writes after it (checks/quantities.py), and a which
question after an opening phrase read as a choice (answer_form.py)."""

from __future__ import annotations

import pytest
from support import make_agent

from offline_agent.agents.verify import VerifyAgent
from offline_agent.answer_form import answer_form
from offline_agent.backends import ScriptedBackend
from offline_agent.checks import DEFAULT_REWRITES
from offline_agent.checks.quantities import Unit, with_unit
from offline_agent.retrieval import open_corpus
from offline_agent.tools import build_tools


@pytest.mark.parametrize(
    ("number", "sentence", "question", "written"),
    [
        # The three PostgreSQL manual questions (pgdocs) it fixed in the runs on record: the model wrote the number.
        ("80", "The default is 80 bits and the maximum is 4096.",
         "What signature length does a bloom index use if I don't specify one?", "80 bits"),  # pg036
        ("10", "The default is 10 seconds.",
         "When that process waits for WAL, how long does it wait by default?", "10 seconds"),  # pg058
        ("10", "If this value is specified without units, it is taken as kilobytes. The default is 10 megabytes.",
         "At what file size does PostgreSQL start a new log file by default?", "10 megabytes"),  # pg014
        # Units written onto the number, spelled out with "per", and number words.
        ("64", "The default is 64MB.", "How much memory can it use?", "64MB"),
        ("5", "Wait 5s for the children.", "How long does it wait?", "5s"),
        ("32", "The lowest rate is 32 kilobytes per second.", "What is the lowest rate?", "32 kilobytes per second"),
        ("four", "The default is four megabytes.", "How large is the list?", "four megabytes"),
        ("40", "It grows by 40% a year.", "How fast does it grow?", "40%"),
        # The question names the unit: the number alone answers it.
        ("1024", "The value must be between 1 and 1024 megabytes.", "What is the largest size, in megabytes?", None),
        ("16", "The default is 16 MB.", "How many megabytes is the default?", None),
        # A count noun is no unit; a number no sentence writes with a unit has none.
        ("three", "The default value is three connections.", "How many slots are reserved?", None),
        ("1000", "The default is 1000 tuples.", "How many tuples?", None),
        ("1847", "Edison was born in 1847 in Milan, Ohio.", "In which year was he born?", None),
        # Two units for the same number: which one is unknown. A one-letter unit must be written onto the number,
        # and not onto a year; "-1" and "110" are not the number 1 or 10.
        ("10", "Wait 10 seconds, then 10 minutes.", "How long?", None),
        ("5", "Set it to 5 s.", "How long?", None),
        ("1990", "A band of the 1990s.", "When did the band start?", None),
        ("1", "The special value of -1 disables it; 110 ms is the limit.", "What is the threshold?", None),
        ("one", "It matches ones and zeros.", "How many?", None),
    ],
)  # fmt: skip
def test_a_bare_number_takes_the_unit_the_text_writes_after_it(number, sentence, question, written) -> None:
    assert with_unit(number, [sentence], question) == written


def test_the_unit_of_every_sentence_that_writes_one_counts() -> None:
    sentences = ["The value 80 is what most use.", "The default is 80 bits."]  # the first writes no unit
    assert with_unit("80", sentences, "What signature length?") == "80 bits"
    assert with_unit("80", [*sentences, "It takes 80 milliseconds."], "What signature length?") is None
    # Two names of one unit are one unit, written as first read; a one-letter word of the question names none.
    assert with_unit("10", ["The default is 10min.", "That is 10 minutes."], "How long is it?") == "10min"
    assert with_unit("5", ["Wait 5 seconds."], "What's the wait, if it's not set?") == "5 seconds"


def test_the_unit_rewrite_is_the_last_of_the_rewrites() -> None:
    assert isinstance(DEFAULT_REWRITES[-1], Unit) and not Unit.before_checks


@pytest.fixture
def manual_index(tmp_path):
    folder = tmp_path / "manual"
    folder.mkdir()
    (folder / "bloom.md").write_text(
        "# bloom\n\nbloom provides an index access method based on Bloom filters.\n\n"
        "## Parameters\n\nlength is the length of each signature (index entry) in bits. The default is 80 bits "
        "and the maximum is 4096.\n",
        encoding="utf-8",
    )
    (folder / "timeouts.md").write_text(
        "# Timeouts\n\nThe server waits for a lock for one second before it checks for a deadlock.\n",
        encoding="utf-8",
    )
    return open_corpus(folder)


def run(index, outputs: list[str], question: str):
    backend = ScriptedBackend(outputs)
    settings = {"grounded": True, "answer_form": True, "search_k": 4}
    return make_agent(VerifyAgent, backend, build_tools(index), **settings).run(question)


def test_a_run_answers_a_bare_number_with_its_unit(manual_index) -> None:
    outputs = ["Thought: a\nAction: search[bloom signature length default]", "Thought: b\nFinal: 80"]
    trajectory = run(manual_index, outputs, "What signature length does a bloom index use if I don't specify one?")
    assert trajectory.answer == "80 bits"
    assert trajectory.steps[1].details.checked == {"80": "unit as written: 80 bits"}
    assert trajectory.steps[1].raw.endswith("Final: 80")  # what the model wrote is kept as it wrote it


def test_a_run_keeps_a_number_whose_question_names_the_unit(manual_index) -> None:
    outputs = ["Thought: a\nAction: search[bloom signature length default]", "Thought: b\nFinal: 80"]
    trajectory = run(manual_index, outputs, "How many bits long is a bloom index signature by default?")
    assert trajectory.answer == "80"


@pytest.mark.parametrize(
    ("question", "options"),
    [
        # pgdocs pg071 and pg079: the model answered a value ("100 buffers", "0.6") where a name was asked.
        ("On Linux, which has the larger default: bgwriter_flush_after or checkpoint_flush_after?",
         ("bgwriter_flush_after", "checkpoint_flush_after")),
        ("In pg_trgm, which has the higher default: similarity_threshold or word_similarity_threshold?",
         ("similarity_threshold", "word_similarity_threshold")),
        ("In 1990, who was older, Paul Simon or Bob Dylan?", ("Paul Simon", "Bob Dylan")),
    ],
)  # fmt: skip
def test_a_which_question_after_an_opening_phrase_is_a_choice(question: str, options: tuple[str, str]) -> None:
    form = answer_form(question)
    assert form.kind == "choice" and form.options == options and not form.yes_no


@pytest.mark.parametrize(
    "question",
    [
        "In the film, which actor plays the lead?",  # no options
        "On the island, which company makes cars or trucks?",  # "or" between common words, and no comparison
        "In a long question that runs on and on past forty letters, which is older, A or B?",  # no short opener
    ],
)
def test_an_opening_phrase_alone_makes_no_choice(question: str) -> None:
    assert answer_form(question).kind == "open"
