"""Answer forms read off the question, the grounded grammar they give, and the verify strategy's answer checks;
driven by the scripted backend over the tiny corpus."""

from __future__ import annotations

import pytest
from support import make_agent

from offline_agent.agents import ReActAgent, agent_class
from offline_agent.agents.verify import MAX_REFUSALS, VerifyAgent, refused_first_word
from offline_agent.answer_form import answer_form, choice_options, compares, which_of_options
from offline_agent.backends import ScriptedBackend
from offline_agent.checks.dates import dates_event, dates_with_year, event_of, whole_date
from offline_agent.checks.kinds import (
    about_a_place,
    asks_for,
    counted_in,
    described,
    describes,
    description_in,
    predicate_describes,
    type_of,
    with_noun,
)
from offline_agent.checks.names import name_part, name_part_asked, owner, part_of_name
from offline_agent.checks.pairs import shared_subjects
from offline_agent.checks.reading import cut_short
from offline_agent.checks.wording import in_question
from offline_agent.compare import comparison, measure, paired_subjects, same_year, winner
from offline_agent.errors import StepParseError
from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, build_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import WordParser
from offline_agent.steps import Completion
from offline_agent.tools import build_tools

SPEC = GrammarSpec(tools=(ToolSpec("search"),), grounded=True)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Were Scott Derrickson and Ed Wood of the same nationality?", "yes_no"),
        ("Are both Cypress and Ajuga genera?", "yes_no"),
        ("Do the drinks Gibson and Zurracapote both contain gin?", "yes_no"),
        ("Who was born first, Arthur Conan Doyle or Penelope Lively?", "choice"),
        ("Which magazine was started first Arthur's Magazine or First for Women?", "choice"),
        ("who is younger Keith Bostic or Jerry Glanville ?", "choice"),
        ("Which element has the higher atomic number, gold or mercury?", "choice"),  # lower case, but it compares
        ("Is Velvetpark or Shape magazine written more for a lesbian readership?", "choice"),
        ("Which river flows through the birth city of James Joyce?", "open"),
        ("What color clothing do people wear during Oranjegekte or to celebrate Koningsdag?", "open"),
        ("Which company makes cars or trucks in Sweden?", "open"),  # "or" between common words: not options
        ("In which year was the author of Middlemarch born?", "open"),
        ("", "open"),
    ],
)
def test_the_answer_form_is_read_off_the_question(question: str, kind: str) -> None:
    assert answer_form(question).kind == kind


def test_a_yes_no_question_may_only_answer_yes_or_no() -> None:
    checker = GbnfChecker(build_grammar(SPEC, answer_form("Is the Vistula in Poland?").grounding()).gbnf)
    assert checker.accepts("Thought: x\nFinal: yes\n") and checker.accepts("Thought: x\nFinal: No\n")
    assert not checker.accepts("Thought: x\nFinal: Vistula\n")
    assert not checker.accepts("Thought: x\nFinal: Yes, it is.\n")


def test_a_choice_answers_with_its_options_as_the_question_writes_them() -> None:
    question = "Who was born first, Marie Curie or Pierre Curie?"
    grounding = answer_form(question).grounding()
    checker = GbnfChecker(build_grammar(SPEC, grounding).gbnf)
    assert checker.accepts("Thought: x\nFinal: Pierre Curie\n")
    assert not checker.accepts("Thought: x\nFinal: 1859\n")
    assert not checker.accepts("Thought: x\nFinal: no\n")  # a which/who choice is not a yes/no question


@pytest.mark.parametrize(
    ("question", "yes_no"),
    [
        ("Is Velvetpark or Shape magazine written more for a lesbian readership?", False),  # dev200: gold Velvetpark
        ("Was Paul Simon or Bob Dylan born first?", False),
        ("Are both Lygodium or Maxillaria a genus of orchids?", True),  # dev200: gold no
    ],
)
def test_an_auxiliary_question_that_offers_options_asks_which_only_when_it_compares(
    question: str, yes_no: bool
) -> None:
    form = answer_form(question)
    assert form.kind == "choice" and form.yes_no is yes_no
    checker = GbnfChecker(build_grammar(SPEC, form.grounding()).gbnf)
    assert checker.accepts("Thought: x\nFinal: no\n") is yes_no


@pytest.mark.parametrize(
    ("question", "options"),
    [
        ("Which of Jonny Craig and Pete Doherty has been a member of more bands ?", ("Jonny Craig", "Pete Doherty")),
        ("Who of Marie Curie and Pierre Curie was born in Warsaw?", ("Marie Curie", "Pierre Curie")),
        (
            "Which of University of Oxford and Ludwig van Beethoven is older?",
            ("University of Oxford", "Ludwig van Beethoven"),
        ),
        ("Which of the films and books came first?", None),  # no names: stays open
        ("Which of Tara Strong major voice role in animated series is a series?", None),  # no "and"
    ],
)
def test_which_of_two_names_joined_by_and_is_a_choice(question: str, options: tuple[str, str] | None) -> None:
    form = answer_form(question)
    assert which_of_options(question) == options
    assert form.kind == ("choice" if options else "open") and not form.yes_no
    if options:
        checker = GbnfChecker(build_grammar(SPEC, form.grounding()).gbnf)
        assert checker.accepts(f"Thought: x\nFinal: {options[1]}\n")
        assert not checker.accepts("Thought: x\nFinal: 6\n")


def test_an_open_question_has_no_answer_before_anything_is_read() -> None:
    grounding = answer_form("In which city was Marie Curie born?").grounding()
    assert grounding.is_empty
    assert not grounding.accepts("yes") and not grounding.accepts("Marie Curie")
    with pytest.raises(ValueError):
        grounding.gbnf_rules("span-")
    grounding.add("[1] Marie Curie: Marie Curie was born in Warsaw in 1867.")
    assert not grounding.is_empty and grounding.accepts("Warsaw") and not grounding.accepts("no")


def test_in_question_compares_whole_words_after_normalising() -> None:
    question = "What band did the Gator Country guitarist come from?"
    assert in_question("Gator Country", question) and in_question("gator country.", question)
    assert not in_question("Gator", "What band did Gatorade sponsor?")
    assert not in_question("Molly Hatchet", question)
    assert not in_question("", question)
    # A dash or slash parts words: "2014" is in "2014–15", which normalises to "201415".
    assert in_question("2014", "Which manager did Koeman replace in the 2014–15 season?")
    assert in_question("Jean-Paul", "Did Jean-Paul Sartre write Nausea?")
    # A name that is the kind asked for, as the question writes it after "what", answers it (dev200).
    assert not in_question("Hawaii County", "The W. H. Shipman House is in what Hawaii county?")
    assert not in_question("New York City", 'The director of "Big Stone Gap" is based in what New York city?')
    assert in_question("Hawaii", "The W. H. Shipman House is in what Hawaii county?")  # not the kind
    assert in_question("Gator Country", "What Gator Country guitarist co-wrote Bloody Rain?")
    assert in_question("county", "The W. H. Shipman House is in what county?")  # no name


def test_in_question_reads_past_a_letter_typed_or_a_plural_in_long_words() -> None:
    # The question's own typing or number does not make its words another answer (dev200 questions).
    assert in_question("Muhammad Ali", "Who did Muhummad Ali fight next, in Houston?")  # a letter changed
    assert in_question("constitutional", "... what way of filling vacancies was consitutional?")  # left out
    assert in_question("magazine", "Woman's Era and Naj are what kind of magazines?")  # a plural
    assert in_question("Nashville's", "What is Opry Mills in Nashville, Tennessee?")
    assert in_question("Tennesese", "What is Opry Mills in Nashville, Tennessee?")  # two letters swapped
    assert not in_question("Jimmy Ellis", "Who did Muhummad Ali fight next, in Houston?")
    assert not in_question("Marie", "Was Maria Callas a soprano?")  # a short word must be the same
    assert not in_question("Tennesxxe", "What is Opry Mills in Nashville, Tennessee?")  # two letters changed
    assert not in_question("Nashville Tennessee", "Is Opry Mills in Nashville?")  # every word must be there


def test_refused_first_word_looks_only_at_the_start_of_the_answer() -> None:
    raw = "Thought: x\nFinal: 1942 – April 4, 2013"
    start = raw.index("Final: ") + len("Final: ")
    assert refused_first_word(raw, [(start - 1, " 1969")])  # the refused token began at the space
    assert refused_first_word(raw, [(start + 2, "6")])  # inside the first word
    assert not refused_first_word(raw, [(start + 5, " to")])  # after the first word: the answer's head was read
    assert not refused_first_word("Thought: x\nAction: search[a]", [(3, "F")])
    # The end of the text (a special token: it decodes to "") or a line break refused there is no other answer.
    assert not refused_first_word(raw, [(start, "")]) and not refused_first_word(raw, [(start - 1, "\n")])
    # The model meant the number written, without the thousands separator the text read has ("1462" for "1,462").
    raw = "Thought: x\nFinal: 1,462"
    start = raw.index("Final: ") + len("Final: ")
    assert not refused_first_word(raw, [(start + 1, "4")]) and not refused_first_word(raw, [(start + 1, "462")])
    assert refused_first_word(raw, [(start + 1, "9")]) and refused_first_word(raw, [(start - 1, " 2")])
    assert refused_first_word("Thought: x\nFinal: 1462", [(start + 1, "5")])  # no separator: another number


def test_cut_short_is_an_answer_the_grammar_ended_where_the_model_meant_to_write_on() -> None:
    # The grammar let "1" through where the model meant "1000" (its next digit refused): "1" is a strict prefix of
    # what it meant, and the rest is in nothing read.
    raw = "Thought: x\nFinal: 1\n"
    end = raw.index("Final: ") + len("Final: 1")
    assert cut_short(raw, [(end, "0")]) and cut_short(raw, [(end, "000")])
    # A word meant after the last one written: "New York" for "New York City".
    raw = "Thought: x\nFinal: New York"
    assert cut_short(raw, [(len(raw), " City")])
    # A refused mark of punctuation is no more of the answer; a refusal inside the answer is no cut.
    assert not cut_short(raw, [(len(raw), ".")]) and not cut_short(raw, [(len(raw), ",")])
    # Nor is a copula: a span ends before one by design, and the model meant to run on into the predicate (a
    # PostgreSQL answer cut at "... next time it" before " is started").
    assert not cut_short(raw, [(len(raw), " is")]) and not cut_short(raw, [(len(raw), " was")])
    assert cut_short(raw, [(len(raw), " island")])
    assert not cut_short(raw, [(len(raw) - len(" York"), " Jersey")])
    assert not cut_short("Thought: x\nAction: search[New York]", [(35, " City")])
    # The first-word rule does not see the cut: the answer's first word is the one written.
    assert not refused_first_word("Thought: x\nFinal: 1", [(len("Thought: x\nFinal: 1"), "0")])


@pytest.mark.parametrize(
    ("raw", "token", "same"),
    [
        # The thought writes "3" and the text read writes "three": the refused "3" meant the number written.
        ("Thought: The manual says 3 connection slots are reserved.\nFinal: three", "3", True),
        ("Thought: 3 slots.\nFinal: three", " 3", True),
        # A first digit alone may begin another number: without the thought's "3", or with its "30", it is unread.
        ("Thought: The manual gives the number of slots.\nFinal: three", "3", False),
        ("Thought: There are 30 slots.\nFinal: three", "3", False),
        ("Thought: 3.5 slots.\nFinal: three", "3", False),
        ("Thought: 3 slots.\nFinal: four", "3", False),
        # The thought writes the number word read: the refused digits are that number, not one they begin.
        ("Thought: Setting it to zero (which is the default) disables it.\nFinal: zero", "0", True),
        ("Thought: The manual keeps Three slots.\nFinal: three", "3", True),
        ("Thought: The manual says threefold.\nFinal: three", "3", False),
        # A number word meant where the text writes digits: the same number, whatever the thought says.
        ("Thought: x\nFinal: 3", " three", True),
        ("Thought: x\nFinal: 4", " three", False),
    ],
)  # fmt: skip
def test_a_number_meant_in_another_form_than_the_text_writes_is_no_unread_answer(raw, token, same) -> None:
    start = raw.index("Final: ") + len("Final: ")
    offset = start - 1 if token.startswith(" ") else start
    assert refused_first_word(raw, [(offset, token)]) is not same


# ---- the loop, grounded with answer forms --------------------------------------------------------------------


def make(index, outputs, agent: type = VerifyAgent, **config):
    backend = ScriptedBackend(outputs)
    # Four passages a search (the whole tiny corpus, when the words match), so that the answer's document is read.
    settings = {"grounded": True, "answer_form": True, "search_k": 4, **config}
    return make_agent(agent, backend, build_tools(index), **settings), backend


def index_of(folder, documents: dict[str, str]):
    """The index of a corpus of `documents` (file name: text) written into `folder`."""
    from offline_agent.retrieval import open_corpus

    folder.mkdir(parents=True)
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    return open_corpus(folder)


def test_an_open_question_cannot_be_answered_before_a_search(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Warsaw"],
        agent=ReActAgent,
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.answer == "Warsaw"
    first, second = backend.calls[0].grammar, backend.calls[1].grammar
    assert "Final: " not in first and "Final: " in second


def test_an_open_question_with_nothing_read_answers_freely_on_its_last_step(tiny_index) -> None:
    agent, backend = make(tiny_index, ["Thought: I cannot search.\nFinal: Warsaw"], agent=ReActAgent, max_steps=1)
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.answer == "Warsaw" and trajectory.stop_reason == "final"


def test_a_choice_does_not_read_observations_into_its_answers(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Pierre Curie]", "Thought: b\nFinal: Pierre Curie"],
        agent=ReActAgent,
    )
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    assert trajectory.answer == "Pierre Curie"
    assert "1859" not in backend.calls[1].grammar  # the search's text is not a source of answers


def test_in_question_refuses_once_and_the_run_goes_on(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Warsaw]",
            "Thought: b\nFinal: Marie Curie",
            "Thought: c\nFinal: Warsaw",
        ],
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.answer == "Warsaw" and trajectory.stop_reason == "final"
    refused = trajectory.steps[1]
    assert refused.final is None and refused.details.refusal.reason == "in_question"
    assert "named in the question" in refused.observation
    assert "Observation: Marie Curie is named in the question" in backend.calls[2].prompt


def test_a_check_left_out_refuses_nothing_and_the_others_still_run(tiny_index) -> None:
    outputs = ["Thought: a\nAction: search[Marie Curie Warsaw]", "Thought: b\nFinal: Marie Curie"]
    agent, _ = make(tiny_index, [*outputs, "Thought: c\nFinal: Warsaw"], without="in_question")
    trajectory = agent.run("In which city was Marie Curie born?")
    # Not refused as named in the question: the next check in the order, asks_for, refuses it (no city).
    assert trajectory.steps[1].details.refusal.reason == "asks_for" and trajectory.answer == "Warsaw"
    agent, _ = make(tiny_index, outputs, without="in_question,asks_for")
    assert agent.run("In which city was Marie Curie born?").answer == "Marie Curie"
    assert "in_question" not in [check.name for check in agent.pipeline.checks]
    assert [check.name for check in agent.pipeline.checks][:2] == ["unread", "one_side"]
    # A rewrite is named with _ for its spaces; both kinds in one list.
    agent, _ = make(tiny_index, outputs, without="person_named, sides")
    assert "person named" not in [rewrite.name for rewrite in agent.pipeline.rewrites]
    assert "sides" not in [check.name for check in agent.pipeline.checks]


def test_a_check_left_out_by_a_name_no_check_has_is_a_one_line_error(tiny_index) -> None:
    from offline_agent.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        make(tiny_index, [], without="in_questions")
    message = str(error.value)
    assert message.startswith("option without of strategy verify: no check or rewrite named in_questions; choose from ")
    assert "in_question, referent" in message and "person_named" in message and "\n" not in message


def test_the_same_answer_written_again_after_a_refusal_is_kept(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Thought: b\nFinal: Marie Curie",
            "Thought: c\nFinal: Marie Curie",
        ],
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.answer == "Marie Curie"


def test_an_answer_refused_as_wrong_cannot_be_written_again_with_exclude_refused(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Warsaw]",
            "Thought: b\nFinal: Marie Curie",
            "Thought: c\nFinal: Warsaw",
        ],
        exclude_refused=True,
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.answer == "Warsaw"
    grammar = GbnfChecker(backend.calls[2].grammar)
    assert not grammar.accepts("Thought: c\nFinal: Marie Curie\n")  # nor a span it begins, nor one beginning with it
    assert not grammar.accepts("Thought: c\nFinal: Marie\n")
    assert grammar.accepts("Thought: c\nFinal: Warsaw\n") and grammar.accepts("Thought: c\nFinal: Curie\n")


def test_after_a_refusal_that_says_what_to_find_the_next_step_may_only_search_anew(tiny_index) -> None:
    outputs = [
        "Thought: a\nAction: search[Marie Curie Warsaw]",
        "Thought: b\nFinal: Marie Curie",
        "Thought: c\nAction: search[Warsaw]",
        "Thought: d\nFinal: Warsaw",
    ]
    agent, backend = make(tiny_index, outputs, search_after_refusal=True)
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.steps[1].details.refusal.reason == "in_question"
    assert trajectory.answer == "Warsaw"
    after, later = GbnfChecker(backend.calls[2].grammar), GbnfChecker(backend.calls[3].grammar)
    assert after.accepts("Thought: c\nAction: search[Warsaw]\n")
    assert not after.accepts("Thought: c\nFinal: Warsaw\n")
    assert later.accepts("Thought: d\nFinal: Warsaw\n")  # only the step right after the refusal
    # Off, the step after the refusal may answer, as before.
    agent, backend = make(tiny_index, [outputs[0], outputs[1], outputs[3]], search_after_refusal=False)
    assert agent.run("In which city was Marie Curie born?").answer == "Warsaw"
    assert GbnfChecker(backend.calls[2].grammar).accepts("Thought: c\nFinal: Warsaw\n")


def test_one_side_shows_the_compared_document_not_yet_read(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw chemist]",  # Marie Curie and Warsaw, not Pierre Curie
            "Thought: b\nFinal: Marie Curie",
            "Thought: c\nFinal: Pierre Curie",
        ],
    )
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "one_side" and refused.details.refusal.answer == "Marie Curie"
    assert refused.details.seen_titles == ["Pierre Curie"]  # only the side not read yet
    assert refused.observation.startswith("The question also names Pierre Curie, which you have not read:")
    assert "born in Paris in 1859" in backend.calls[2].prompt
    assert trajectory.answer == "Pierre Curie" and trajectory.steps[2].details.refusal is None


def test_one_side_lets_a_comparison_of_documents_read_stand(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Pierre Curie]",
            "Thought: b\nFinal: no",
            *("Final: Warsaw", "Final: Paris", "different"),  # same: each city on its document alone, then the two
        ],
    )
    trajectory = agent.run("Were Marie Curie and Pierre Curie born in the same city?")
    assert trajectory.answer == "no" and len(trajectory.steps) == 2


def refused_then(index, question: str, search: str, first: str, second: str):
    """A run that searches `search`, writes the Final `first`, which a check refuses, then `second` (with
    exclude_refused): the trajectory, the refused step and the backend."""
    outputs = [f"Thought: a\nAction: search[{search}]", f"Thought: b\nFinal: {first}", f"Thought: c\nFinal: {second}"]
    agent, backend = make(index, outputs, exclude_refused=True)
    trajectory = agent.run(question)
    return trajectory, trajectory.steps[1], backend


@pytest.mark.parametrize(
    ("question", "answer", "person"),
    [
        ("Who wrote the book?", 'J. R. R. Tolkien\'s "The Hobbit", a novel', "J. R. R. Tolkien"),
        ("Who wrote the book?", "Tolkien's novel", "Tolkien"),
        ("Who owns the chain?", "McDonald's Corporation", None),  # the possessive is part of the name
        ("Who wrote the book?", "J. R. R. Tolkien", None),
        ("What did Tolkien write?", 'Tolkien\'s "The Hobbit"', None),  # not a who question
    ],
)  # fmt: skip
def test_the_owner_of_a_possessive_answers_a_who_question(question: str, answer: str, person) -> None:
    assert owner(answer_form(question), answer) == person


def test_a_who_question_answered_with_a_persons_work_gives_the_person(tmp_path) -> None:
    index = index_of(
        tmp_path / "books",
        {"hobbit.md": '# The Hobbit\n\nThe name comes from J. R. R. Tolkien\'s "The Hobbit", a novel for children.'},
    )
    written = 'J. R. R. Tolkien\'s "The Hobbit", a novel'  # a span ends on a word, not on a quote
    outputs = ["Thought: a\nAction: search[The Hobbit name]", f"Thought: b\nFinal: {written}"]
    agent, _ = make(index, outputs)
    trajectory = agent.run("Who wrote the book that gave the band its name?")
    assert trajectory.answer == "J. R. R. Tolkien"
    assert trajectory.steps[1].details.checked == {written: "person named: J. R. R. Tolkien"}


def test_unread_refuses_a_final_whose_first_word_the_grammar_overruled(tiny_index) -> None:
    overruled = Completion(text="Thought: b\nFinal: Warsaw", finish_reason="stop", rejections=[(17, " Paris")])
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie]", overruled, *["Thought: c\nFinal: Warsaw"] * 2],
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "unread"
    assert "not in anything you have read" in refused.observation
    # The refusal shows what a search for the whole question finds that the run has not read: Warsaw's document.
    found = refused.observation.split("\n", 1)[1]
    assert found.startswith("What a search for the whole question finds that you have not read:\n[1] Warsaw: ")
    assert "Marie Curie:" not in found and refused.details.tool.titles == ["Warsaw"]
    # Written again, it is weighed as any answer, and its document has been read now.
    assert trajectory.steps[2].details.refusal is None and trajectory.answer == "Warsaw"


def test_unread_refuses_a_final_the_grammar_cut_short(tiny_index) -> None:
    # Having read only Pierre Curie's page, the model meant "1903 and 1911": the grammar let the span "1903" through
    # and refused the " and" of the unread rest, so "1903" is a strict prefix of what it meant.
    text = "Thought: b\nFinal: 1903"
    cut = Completion(text=text, finish_reason="stop", rejections=[(len(text), " and")])
    outputs = ["Thought: a\nAction: search[Pierre Curie]", cut, "Thought: c\nFinal: 1903"]
    agent, _ = make(tiny_index, outputs)
    trajectory = agent.run("In which years did Marie Curie win Nobel Prizes?")
    refused = trajectory.steps[1]
    assert refused.final is None and refused.details.refusal.reason == "unread"
    assert "not in anything you have read" in refused.observation
    # Ended where the model meant to end (its refused choice was a full stop), the answer stands.
    ended = Completion(text=text, finish_reason="stop", rejections=[(len(text), ".")])
    agent, _ = make(tiny_index, [outputs[0], ended])
    trajectory = agent.run("In which years did Marie Curie win Nobel Prizes?")
    assert trajectory.steps[1].details.refusal is None and trajectory.answer == "1903"


def test_a_first_word_the_grammar_overruled_because_it_was_refused_as_wrong_is_not_unread(tiny_index) -> None:
    # dev200 #51: "Carrefour" refused as no number and taken out; the model began it again (" Car"), the grammar
    # overruled it, and "1,462", read on the page, was refused as unread. The model meant an answer it had read.
    overruled = Completion(text="Thought: c\nFinal: Warsaw", finish_reason="stop", rejections=[(17, " Marie")])
    outputs = ["Thought: a\nAction: search[Marie Curie Warsaw]", "Thought: b\nFinal: Marie Curie", overruled]
    agent, _ = make(tiny_index, outputs, exclude_refused=True)
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.steps[1].details.refusal.reason == "in_question"
    assert trajectory.steps[2].details.refusal is None and trajectory.answer == "Warsaw"
    # Without exclude_refused nothing was taken out of the grammar, and an overruled first word means unread text.
    agent, _ = make(tiny_index, [*outputs, "Thought: d\nFinal: Warsaw"])
    assert agent.run("In which city was Marie Curie born?").steps[2].details.refusal.reason == "unread"


def test_an_answer_refused_as_unread_and_written_again_is_still_weighed(tiny_index) -> None:
    # "Marie Curie" first overruled (the model meant another word), then written again: it repeats the question.
    overruled = Completion(text="Thought: b\nFinal: Marie Curie", finish_reason="stop", rejections=[(17, " Paris")])
    agent, _ = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie]",
            overruled,
            "Thought: c\nFinal: Marie Curie",
            "Thought: d\nAction: search[Warsaw]",
            "Thought: e\nFinal: Warsaw",
        ],
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    reasons = [step.details.refusal.reason for step in trajectory.steps[1:3]]
    assert reasons == ["unread", "in_question"] and trajectory.answer == "Warsaw"


def test_refusals_stop_after_the_limit_and_never_on_the_last_step(tiny_index) -> None:
    searches = ["Thought: s\nAction: search[Marie Curie]"]
    names = ["Marie", "Curie", "Marie Curie", "physicist", "chemist"]
    finals = [f"Thought: f\nFinal: {name}" for name in names]
    agent, _ = make(tiny_index, searches + finals)
    trajectory = agent.run("In which city was Marie Curie born?")
    refusals = [step for step in trajectory.steps if step.details is not None and step.details.refusal]
    assert len(refusals) == MAX_REFUSALS
    assert trajectory.stop_reason == "final"
    agent, _ = make(tiny_index, ["Thought: f\nFinal: Marie Curie"], max_steps=1)
    assert agent.run("In which city was Marie Curie born?").answer == "Marie Curie"


def test_react_accepts_what_verify_refuses(tiny_index) -> None:
    agent, _ = make(
        tiny_index, ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Marie Curie"], agent=ReActAgent
    )
    assert agent.run("In which city was Marie Curie born?").answer == "Marie Curie"


def test_verify_is_registered_and_its_refusals_round_trip(tiny_index) -> None:
    from offline_agent.steps import Trajectory

    assert agent_class("verify") is VerifyAgent
    agent, _ = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Warsaw]",
            "Thought: b\nFinal: Marie Curie",
            "Thought: c\nFinal: Warsaw",
        ],
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    again = Trajectory.from_json(trajectory.to_json())
    assert again.steps[1].details.refusal == trajectory.steps[1].details.refusal


def test_grounding_without_yes_no() -> None:
    grounding = Grounding(["The Vistula flows through Warsaw."], yes_no=False)
    checker = GbnfChecker(build_grammar(SPEC, grounding).gbnf)
    assert checker.accepts("Thought: x\nFinal: Warsaw\n") and not checker.accepts("Thought: x\nFinal: yes\n")


@pytest.mark.parametrize(
    ("question", "wants"),
    [
        ("In which year was Marie Curie born?", "date"),
        ("When did the Vistula flood Warsaw?", "date"),
        ("The lake is in a county that has a population of how many inhabitants ?", "number"),
        ("Which signee was Rookie of the Year when he was 19?", None),  # "when" inside the question
        ("Kerensky was defeated in the course of a civil war that ended when?", "date"),  # "when" last
        ("When was the gallery founded?", "date"),  # "when" and an auxiliary ask for a date
        # "When" that opens a clause before the question does not (pgdocs pg004, pg007 and pg032 were read as
        # date questions, and their grammar offered dates only)
        ("When a standby can't get WAL from streaming, how long does it wait before trying again?", "number"),
        ("When a recovery target is reached and recovery_target_action is not set, what does the server do?", None),
        ("When PostgreSQL uses System V semaphores, in sets of how many does it allocate them?", "number"),
        ("Who founded the gallery?", None),
        ("According to the 2001 census, what was the population of the town in which Kirton is located?", "number"),
        ("What is the atomic number of the element named after Dmitri Mendeleev?", "number"),
        ("What is the name of the town in which Kirton is located?", None),
    ],
)
def test_what_an_open_question_asks_for(question: str, wants: str | None) -> None:
    form = answer_form(question)
    assert form.wants == wants
    assert form.fits("1,047") and form.fits("twelve") and form.fits("Kansas") is (wants is None)


def test_a_year_does_not_fit_a_count_nor_a_short_number_a_date() -> None:
    count = answer_form("How many copies of the novel were sold?")
    assert not count.fits("1959") and not count.fits(" 2010 ")
    assert count.fits("1,959") and count.fits("250 million") and count.fits("12") and count.fits("13 September 1916")
    assert not count.fits("published in 1978") and not count.fits("1959 copies")  # years alone are no count
    year = answer_form("In which year was the novel published?")
    assert year.fits("1959") and year.fits("February 17, 1945") and year.fits("the 1990s")
    assert not year.fits("17") and not year.fits("106")  # a day or a count, not a year


@pytest.mark.parametrize(
    ("question", "event"),
    [
        ("Operation Cold Comfort was a failed raid by a special forces unit founded in what year?", "founded"),
        ("In what year was the singer who popularized the song born?", "born"),
        ("In which year did the emperor who commissioned the Taj Mahal die?", "die"),
        ("When was the man who hosted the show elected?", "elected"),
        ("What year did Guns N Roses perform a promo for a movie?", None),  # no event verb at either place
        ("When did the Vistula flood Warsaw?", None),
        ("How many copies of the novel were sold?", None),  # not a date question
    ],
)
def test_the_event_a_date_question_dates(question: str, event: str | None) -> None:
    assert event_of(answer_form(question)) == event


@pytest.mark.parametrize(
    ("question", "sentence", "answer", "dates"),
    [
        (
            "A unit founded in what year?",
            "Operation Cold Comfort was a failed SAS raid on February 17, 1945.",
            "1945",
            False,
        ),
        (
            "A unit founded in what year?",
            "The Special Air Service was established in 1941.",
            "1941",
            True,
        ),  # its family
        ("When was the singer born?", "The song was popularized by Patti Page in 1949.", "1949", False),
        (
            "When was the singer born?",
            "Clara Ann Fowler (November 8, 1927 – January 1, 2013) was a singer.",
            "1927",
            True,
        ),
        (
            "When did the singer die?",
            "Clara Ann Fowler (November 8, 1927 – January 1, 2013) was a singer.",
            "2013",
            True,
        ),
        (
            "When did the singer die?",
            "Clara Ann Fowler (November 8, 1927 – January 1, 2013) was a singer.",
            "1927",
            False,
        ),
        ("When was the man elected?", "He won the election of 1990.", "1990", True),  # another form of its own verb
        ("When did the Vistula flood Warsaw?", "Warsaw was rebuilt after 1945.", "1945", True),  # no event named
    ],
)
def test_a_sentence_dates_the_event_asked_about(question: str, sentence: str, answer: str, dates: bool) -> None:
    assert dates_event(answer_form(question), sentence, answer) is dates


def test_event_refuses_the_date_of_something_else_and_shows_its_sentence(tiny_index) -> None:
    outputs = ["Thought: a\nAction: search[Pierre Curie]", "Thought: b\nFinal: 1903", "Thought: c\nFinal: 1859"]
    agent, backend = make(tiny_index, outputs, exclude_refused=True)
    trajectory = agent.run("In which year was the physicist who shared the Nobel Prize with Marie Curie born?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "event" and refused.details.refusal.answer == "1903"
    assert refused.observation.startswith(
        'What you have read gives 1903 as the date of something else, not of when it was born: "He shared the 1903'
    )
    assert trajectory.answer == "1859"
    grammar = GbnfChecker(backend.calls[2].grammar)
    assert not grammar.accepts("Thought: c\nFinal: 1903\n") and grammar.accepts("Thought: c\nFinal: 1859\n")


@pytest.mark.parametrize(
    ("question", "search", "answer", "refusal"),
    [
        # a year read on the page, not a length
        (
            "How many kilometres long is the river that flows through Warsaw?",
            "Vistula Warsaw Marie Curie",
            "1,047",
            "The question asks for a number, and 1867 reads as a year",
        ),
    ],
)
def test_kind_refuses_a_year_for_a_number(tiny_index, question: str, search: str, answer: str, refusal: str) -> None:
    outputs = [f"Thought: a\nAction: search[{search}]", "Thought: b\nFinal: 1867", f"Thought: c\nFinal: {answer}"]
    agent, _ = make(tiny_index, outputs)
    trajectory = agent.run(question)
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "kind" and refused.details.refusal.answer == "1867"
    assert refused.observation.startswith(refusal)
    assert trajectory.answer == answer


MANUAL = {
    "pg-isready.md": "# pg_isready\n\n## Exit Status\n\npg_isready returns 0 to the shell if the server is accepting "
    "connections, 1 if it is rejecting them, 2 if there was no response to the connection attempt, and 3 if no "
    "attempt was made.",
    "psql.md": "# psql\n\n## Exit Status\n\npsql returns 0 to the shell if it finished normally, 1 if a fatal "
    "error of its own occurs, and 3 if an error occurred in a script and ON_ERROR_STOP was set.",
    "ssl.md": "# Secure TCP/IP Connections with SSL\n\nIf the private key file is owned by root, its permissions "
    "may be 0640 or less. The file was first required in 1999.",
}


@pytest.mark.parametrize(
    ("question", "search", "answer"),
    [  # a manual's numbers are the things asked for: an exit status, an exit code, a permission mode
        ("What exit status does pg_isready return when there was no response?", "pg_isready exit status", "2"),
        (
            "With ON_ERROR_STOP set, what exit code does psql return when a script fails?",
            "psql exit ON_ERROR_STOP",
            "3",
        ),
        ("If the private key file is owned by root, what permissions may it have?", "private key permissions", "0640"),
    ],
)
def test_a_number_that_is_no_year_answers_a_which_noun_question(tmp_path, question, search, answer) -> None:
    index = index_of(tmp_path / "manual", MANUAL)
    agent, _ = make(index, [f"Thought: a\nAction: search[{search}]", f"Thought: b\nFinal: {answer}"])
    trajectory = agent.run(question)
    assert trajectory.answer == answer and trajectory.steps[1].details.refusal is None


@pytest.mark.parametrize(
    ("question", "sentence", "answer", "counted"),
    [  # a manual writes a count of a thousand or more without a comma, followed by what it counts
        ("How many bytes of query text are kept by default?", "The default value is 1024 bytes.", "1024", True),
        ("By default, how many inserted tuples start a vacuum?", "The default is 1000 tuples.", "1000", True),
        ("How many entries does the cache hold?", "It holds at most 5000 entries per process.", "5000", True),
        # a year followed by other words counts nothing the question names
        ("How many copies of the story sold?", "It first appeared in the 1959 issue of Nugget.", "1959", False),
        ("It has operations in how many countries?", "Founded in 1972 as Exxon, it grew.", "1972", False),
        ("How many entries does the cache hold?", "The cache was added in 2009 in version 8.4.", "2009", False),
        ("In which year did the cache hold 5000 entries?", "It holds 5000 entries.", "5000", False),  # no count asked
    ],
)
def test_a_number_followed_by_what_the_question_counts_is_a_count(question, sentence, answer, counted) -> None:
    assert counted_in(answer_form(question), answer, sentence) is counted


def test_kind_lets_a_count_written_without_a_comma_stand(tmp_path) -> None:
    index = index_of(
        tmp_path / "manual",
        {
            "activity.md": "# Statistics\n\n## Query size\n\nThe text of each session's current query is kept for "
            "the activity view. The default value is 1024 bytes. It was added in 2009."
        },
    )
    outputs = ["Thought: a\nAction: search[query text kept bytes]", "Thought: b\nFinal: 1024"]
    agent, _ = make(index, outputs)
    trajectory = agent.run("How many bytes of each session's current query text are kept by default?")
    assert trajectory.answer == "1024" and trajectory.steps[1].details.refusal is None
    agent, _ = make(index, [outputs[0], "Thought: b\nFinal: 2009", "Thought: c\nFinal: 1024"])
    trajectory = agent.run("How many bytes of each session's current query text are kept by default?")
    assert trajectory.steps[1].details.refusal.reason == "kind" and trajectory.answer == "1024"


def test_a_step_no_check_sees_may_only_answer_a_number_question_with_a_number(tiny_index) -> None:
    # The last step may only answer and no check sees it: the grammar offers only the spans that fit the kind asked.
    outputs = ["Thought: a\nAction: search[Vistula river Poland]", "Thought: b\nFinal: 1,047 kilometres"]
    agent, backend = make(tiny_index, outputs, max_steps=2)
    trajectory = agent.run("How long is the river that flows through Warsaw?")
    last = backend.calls[1].grammar
    assert '"1,047 kilometres"' in last and '"1,047"' in last and '"about 1,047"' in last
    assert "Baltic" not in last and "1945" not in last  # no number, or a year only
    assert trajectory.answer == "1,047 kilometres" and trajectory.steps[1].final_only
    assert trajectory.steps[1].details.grounding.sentences == last.count(" | ") + 1  # the spans offered


def test_after_the_refusal_limit_a_number_question_is_answered_from_the_numbers_read(tiny_index) -> None:
    names = ["Poland", "Gdansk", "Vistula"]
    outputs = ["Thought: a\nAction: search[Vistula river Poland]"] + [f"Thought: f\nFinal: {name}" for name in names]
    agent, backend = make(tiny_index, [*outputs, "Thought: g\nFinal: 1,047"])
    trajectory = agent.run("How long is the river that flows through Warsaw?")
    assert [step.details.refusal.reason for step in trajectory.steps[1:4]] == ["kind"] * 3
    checked, unchecked = backend.calls[3].grammar, backend.calls[4].grammar
    assert "Baltic" in checked and "Baltic" not in unchecked and '"1,047"' in unchecked
    assert "search" in unchecked  # the step may still search; only its Final is narrowed
    assert trajectory.answer == "1,047 kilometres"  # with the unit the text writes (checks/quantities.py)


def test_a_step_is_left_whole_where_the_kind_asked_is_nothing_or_nothing_read_fits(tiny_index) -> None:
    for question, search, answer in [
        ("Which city does the Vistula flow into the sea near?", "Vistula river Poland", "Gdansk"),
        ("How many children did Pierre Curie have?", "Pierre Curie French physicist", "Paris"),  # years only
    ]:
        outputs = [f"Thought: a\nAction: search[{search}]", f"Thought: b\nFinal: {answer}"]
        agent, backend = make(tiny_index, outputs, max_steps=2)
        trajectory = agent.run(question)
        assert answer in backend.calls[1].grammar and trajectory.answer == answer, question
    assert "1859" in trajectory.steps[0].observation and "1,047" not in trajectory.steps[0].observation


def test_kind_refuses_a_name_for_a_year(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie Warsaw]", "Thought: b\nFinal: Poland", "Thought: c\nFinal: 1867"],
    )
    trajectory = agent.run("In which year was Marie Curie born?")
    assert trajectory.steps[1].details.refusal.reason == "kind"
    assert "asks for a year or a date" in trajectory.steps[1].observation
    assert "Its own document" not in trajectory.steps[1].observation  # no document is titled Poland
    assert trajectory.answer == "1867"


def test_kind_shows_the_document_of_a_name_given_for_a_number(tiny_index) -> None:
    # dev200 #51: "Carrefour" for "... bought by a chain that operated how many hypermarkets?", the chain on the way.
    outputs = ["Thought: a\nAction: search[Warsaw]", "Thought: b\nFinal: Vistula", "Thought: c\nFinal: 1,047"]
    agent, backend = make(tiny_index, outputs, search_k=1)
    trajectory = agent.run("How many kilometres long is the river that flows through Warsaw?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "kind" and refused.details.refusal.answer == "Vistula"
    assert refused.observation.startswith("The question asks for a number, and Vistula is not one.")
    shown = "\nIts own document:\n[1] Vistula: The Vistula is the longest river in Poland, about 1,047"
    assert shown in refused.observation
    assert refused.details.tool.titles == ["Vistula"]
    assert '"1,047"' not in backend.calls[1].grammar and trajectory.answer == "1,047"  # read off the document shown


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Which river flows through the birth city of James Joyce?", ("river",)),
        ("What city hosted the 1936 Summer Olympics?", ("city",)),
        ("Which films by the director of Jaws won an Oscar?", ("films",)),
        ("What government position was held by the woman who portrayed Corliss Archer?", ("government", "position")),
        ("In which city was the composer of The Magic Flute born?", ("city",)),
        ("This singer of A Rather Blustery Day also voiced what hedgehog?", ("hedgehog",)),
        ("Which contest in California pays homage to an American novelist?", ("contest",)),
        ("Which other film did the lead actor of Jaws appear in?", ("film",)),  # "other" qualifies the kind
        ("What other device can control the program?", ("device",)),
        ("What is the capital of Poland?", ()),  # "is": no kind named
        ("Which one of them was born first?", ()),
        ("What type of music do they play?", ()),
        ("Robert Suettinger served under which former Governor of Arkansas?", ()),
        ("What nationality was the architect of the Sydney Opera House?", ()),  # a property, not a document's kind
        ("In which year was Marie Curie born?", ()),  # a date: the kind check's business
        ("Who was born first, Marie Curie or Pierre Curie?", ()),  # a choice
    ],
)
def test_the_kind_of_thing_a_question_asks_for(question: str, kind: tuple[str, ...]) -> None:
    assert asks_for(answer_form(question)) == kind


def test_a_first_sentence_describes_the_kind_asked_for_in_singular_or_plural() -> None:
    form = answer_form("Which churches stand in the old town of Gdansk?")
    assert describes(form, "St. Mary's Church is a Gothic church in Gdansk.")
    assert not describes(form, "Gdansk is a port city on the Baltic coast.")
    assert describes(answer_form("What is the capital of Poland?"), "anything at all")


def test_a_noun_the_same_in_both_numbers_is_not_cut_to_a_false_singular() -> None:
    # dev200: "Daredevil", the right answer, was refused as no show: "series" was read as "sery", so a document
    # that says it is "a television series" named no word that a show is also called.
    form = answer_form("After what show released on Netflix earlier did the shows lead to the miniseries?")
    assert asks_for(form) == ("show",)
    assert describes(form, "Marvel's Daredevil, or simply Daredevil, is an American web television series.")
    assert predicate_describes(form, "Daredevil is an American web television series created for Netflix.")
    assert describes(answer_form("Which city hosted the games?"), "Tokyo is a metropolis on Honshu.")
    assert describes(answer_form("Which campus did she study at?"), "Rye is a campus of the university.")
    assert describes(answer_form("Which rivers meet there?"), "The Liffey is a river.")  # plurals still match


def test_only_what_a_first_sentence_says_its_subject_is_describes_the_kind_asked_for() -> None:
    form = answer_form("Tysons Galleria is located in what county?")
    # "County" past the predicate is part of the name of where McLean is, not what McLean is.
    assert not describes(form, "McLean is a census-designated place in Fairfax County in Northern Virginia.")
    assert describes(form, "Fairfax County is a county in the Commonwealth of Virginia.")
    movie = answer_form("Which movie starred both sisters?")
    assert describes(movie, "Read It and Weep is a 2006 Disney Channel Original Movie which premiered in July.")
    assert describes(movie, "It was a hit, and the studio released it as a movie in 2006.")  # no capital: counts


@pytest.mark.parametrize(
    ("question", "place"),
    [
        ("Tysons Galleria is located in what county?", True),
        ("What is the county seat of the county where East Lempster is located?", True),  # a county on the way
        ("Where is the company that Sachin Warrier worked for headquartered?", True),
        ("In which city was the composer of The Magic Flute born?", True),
        ("Which river flows through the birth city of James Joyce?", False),
        ("Who founded the gallery?", False),
    ],
)
def test_a_question_about_a_place(question: str, place: bool) -> None:
    assert about_a_place(answer_form(question)) is place


@pytest.fixture
def place_index(tmp_path):
    documents = {
        "chopin.md": "# Fryderyk Chopin\n\nFryderyk Chopin was a Polish composer born in Zelazowa Wola in 1810.",
        "wola.md": "# Zelazowa Wola, Masovian Voivodeship\n\nZelazowa Wola is a village in Sochaczew County in "
        "central Poland. Fryderyk Chopin was born there.",
        "county.md": "# Sochaczew County\n\nSochaczew County is a county in central Poland. Its seat is Sochaczew.",
    }
    return index_of(tmp_path / "places", documents)


@pytest.mark.parametrize(
    ("question", "part"),
    [
        ("What is the first name of Jack Benny Binion's father?", "first"),
        ("What is the given name of the character depicted as Juliet Hulme?", "first"),
        ("What is the middle name of the actress who plays Bobbi Bacha?", "middle"),
        ("What was the surname of the first person to climb it?", "last"),
        ("What is the family name of the house that ruled it?", "last"),
        ("What is the name of the singer who wrote it?", None),  # the whole name
        ("What nickname did Babe Ruth have?", None),
        ("Who was the first named king of Poland?", None),
    ],
)
def test_name_part_reads_which_part_of_a_name_is_asked(question: str, part: str | None) -> None:
    assert name_part(question) == part and name_part_asked(answer_form(question)) == part


def test_part_of_name_leaves_out_nicknames_and_needs_the_words() -> None:
    name = 'Lester Ben "Benny" Binion'
    assert [part_of_name(name, part) for part in ("first", "middle", "last")] == ["Lester", "Ben", "Binion"]
    assert part_of_name("Sela Ward", "middle") is None and part_of_name("Sela", "first") is None
    assert part_of_name("J. R. R. Tolkien", "last") == "Tolkien"


def test_name_part_answers_with_the_part_asked_of_a_whole_name(tiny_index) -> None:
    agent, _ = make(tiny_index, ["Thought: a\nAction: search[Pierre Curie]", "Thought: b\nFinal: Pierre Curie"])
    trajectory = agent.run("What is the first name of the physicist born in Paris in 1859?")
    step = trajectory.steps[1]
    assert trajectory.answer == "Pierre" and step.final == "Pierre" and step.raw.endswith("Final: Pierre Curie")
    assert step.details.checked == {"Pierre Curie": "first name: Pierre"} and step.details.refusal is None


@pytest.mark.parametrize(
    ("question", "whole"),
    [
        ("When was the lawyer who led the campaign born?", True),
        ("Kerensky was defeated in the course of a civil war that ended when?", True),
        ("What date did the ship sink?", True),
        ("In which year was the author of Middlemarch born?", False),
        ("What decade did the band form in?", False),
        ("Who founded the gallery?", False),
    ],
)
def test_a_question_that_asks_when_wants_the_date_in_full(question: str, whole: bool) -> None:
    assert whole_date(answer_form(question)) is whole


@pytest.mark.parametrize(
    ("sentence", "year", "dates"),
    [
        ("Paul Manafort (born April 1, 1949) is an American lawyer.", "1949", ["April 1, 1949"]),
        ("Ronald Koeman (born 21 March 1963) is a former Dutch footballer.", "1963", ["21 March 1963"]),
        ("The civil war ended in October 1922 with the fall of Vladivostok.", "1922", ["October 1922"]),
        ("Born on May 2, 1950 or on June 3, 1950.", "1950", ["May 2, 1950", "June 3, 1950"]),
        ("It was released in 1949, and again on May 2, 1950.", "1949", []),  # no date with that year
        ("He was born in 1949.", "1949", []),
    ],
)
def test_the_dates_a_sentence_writes_with_a_year(sentence: str, year: str, dates: list[str]) -> None:
    assert dates_with_year(year, sentence) == dates


def test_a_bare_year_for_a_question_that_asks_when_is_answered_with_the_date_as_written(tmp_path) -> None:
    # Dev200: "When was the American lawyer ... born?" answered "1949", gold "April 1, 1949".
    index = index_of(
        tmp_path / "dated",
        {
            "ada.md": "# Ada Lane\n\nAda Lane (born April 1, 1949) is a ferry pilot from Leeds. "
            "She retired on 3 May 2010.",
            "harbour.md": "# Quiet Harbour\n\nQuiet Harbour is a film about Ada Lane, made in 1949.",
        },
    )
    outputs = ["Thought: a\nAction: search[Ada Lane ferry pilot]", "Thought: b\nFinal: 1949"]
    agent, _ = make(index, outputs)
    trajectory = agent.run("When was the ferry pilot Ada Lane born?")
    assert trajectory.answer == "April 1, 1949"
    assert trajectory.steps[1].details.checked == {"1949": "date as written: April 1, 1949"}
    assert trajectory.steps[1].raw.endswith("Final: 1949")  # what the model wrote stays on record
    # The checks weigh the year written: a refused one ("2010", the date of her retirement) is the one taken out.
    agent, backend = make(
        index, [outputs[0], "Thought: b\nFinal: 2010", "Thought: c\nFinal: 1949"], exclude_refused=True
    )
    trajectory = agent.run("When was the ferry pilot Ada Lane born?")
    assert trajectory.steps[1].details.refusal.reason == "event"
    assert trajectory.steps[1].details.refusal.answer == "2010" and trajectory.answer == "April 1, 1949"
    assert not GbnfChecker(backend.calls[2].grammar).accepts("Thought: c\nFinal: 2010\n")
    # A question for the year keeps the year; so does one whose sentences write two dates with that year.
    agent, _ = make(index, outputs)
    assert agent.run("In which year was the ferry pilot Ada Lane born?").answer == "1949"
    index = index_of(
        tmp_path / "two",
        {"ada.md": "# Ada Lane\n\nAda Lane was born on April 1, 1949 or on June 2, 1949; the records differ."},
    )
    agent, _ = make(index, outputs)
    assert agent.run("When was the ferry pilot Ada Lane born?").answer == "1949"


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        ("Which type of character is featured by the third book in the series?", "character"),
        ("Woman's Era and Naj are what kind of magazines?", "magazines"),
        ("Bordan Tkachuk was the CEO of a company that provides what sort of products?", "products"),
        ("Are Ferocactus and Silene both types of plant?", None),  # yes/no
        ("What is the capital of Poland?", None),
    ],
)
def test_the_noun_a_question_asks_the_type_of(question: str, noun: str | None) -> None:
    assert type_of(answer_form(question)) == noun


@pytest.mark.parametrize(
    ("answer", "sentence", "written"),
    [
        ("fictional", "Mary Poppins is a fictional character and the protagonist of the books.", "fictional character"),
        ("Weekly women interest", "It is a weekly women interest magazine.", "Weekly women interest magazine"),
        ("fictional character", "Mary Poppins is a fictional character.", None),  # the noun is there already
        ("British", "Mary Poppins is a British fictional character.", None),  # not written together
        ("fiction", "Mary Poppins is a fictional character.", None),  # whole words only
    ],
)  # fmt: skip
def test_an_answer_to_a_type_question_is_written_with_its_noun(answer: str, sentence: str, written) -> None:
    question = "Which type of character is Mary Poppins?" if "character" in sentence else "What kind of magazines?"
    assert with_noun(answer_form(question), answer, sentence) == written


def test_a_type_question_is_answered_with_the_kind_and_its_noun_as_read(tiny_index) -> None:
    outputs = ["Thought: a\nAction: search[Pierre Curie physicist]", "Thought: b\nFinal: French"]
    agent, _ = make(tiny_index, outputs)
    trajectory = agent.run("What type of physicist shared the 1903 Nobel Prize with Marie Curie?")
    assert trajectory.answer == "French physicist"
    assert trajectory.steps[1].details.checked == {"French": "kind as written: French physicist"}
    assert trajectory.steps[1].raw.endswith("Final: French")


def test_name_part_lets_a_one_word_answer_of_the_part_asked_stand(tiny_index) -> None:
    agent, _ = make(tiny_index, ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Marie"])
    trajectory = agent.run("What is the first name of the chemist born in Warsaw in 1867?")
    assert trajectory.answer == "Marie" and trajectory.steps[1].details.refusal is None


def assert_a_hop(refused, answer: str, because: str, title: str) -> None:
    """`refused` is an asks_for refusal of `answer` whose Observation says why (`because`, after the kind) and shows
    the answer's own document, titled `title`."""
    assert refused.details.refusal.reason == "asks_for" and refused.details.refusal.answer == answer
    assert refused.observation.startswith(f"{answer} is not what the question asks for {because}")
    assert f"\nIts own document:\n[1] {title}: " in refused.observation


def test_asks_for_finds_a_place_by_its_title_with_a_region(place_index) -> None:
    agent, _ = make(
        place_index,
        [
            "Thought: a\nAction: search[Fryderyk Chopin Zelazowa Wola Sochaczew County]",
            "Thought: b\nFinal: Zelazowa Wola",  # a village in the county, its document titled with its region
            "Thought: c\nFinal: Sochaczew County",
        ],
    )
    trajectory = agent.run("In which county was Fryderyk Chopin born?")
    because = "(county): Zelazowa Wola is a village in Sochaczew County"
    assert_a_hop(trajectory.steps[1], "Zelazowa Wola", because, "Zelazowa Wola, Masovian Voivodeship")
    assert trajectory.answer == "Sochaczew County" and trajectory.steps[2].details.refusal is None


def test_asks_for_refuses_a_hop_on_the_way(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw]",
            "Thought: b\nFinal: Warsaw",  # the birth city: a hop, not a river
            "Thought: c\nFinal: Vistula",
        ],
    )
    trajectory = agent.run("Which river flows through the birth city of Marie Curie?")
    refused = trajectory.steps[1]
    # The refused answer is the hop on the way: its own document follows, read or not, and the next step may answer.
    assert_a_hop(refused, "Warsaw", "(river): Warsaw is the capital of Poland.\nFind it:", "Warsaw")
    assert "Observation: Warsaw is not what the question asks for" in backend.calls[2].prompt
    assert refused.details.tool.titles == ["Warsaw"]
    assert trajectory.answer == "Vistula" and trajectory.steps[2].details.refusal is None


def test_read_hop_asks_the_hops_own_document_alone_and_shows_its_answer(tiny_index) -> None:
    outputs = [
        "Thought: a\nAction: search[Warsaw]",
        "Thought: b\nFinal: Warsaw",  # the birth city: a hop, not a river
        "Final: Vistula",  # the model reading Warsaw's document alone
        "Thought: c\nFinal: Vistula",
    ]
    agent, backend = make(tiny_index, outputs, read_hop=True, exclude_refused=True)
    trajectory = agent.run("Which river flows through the birth city of Marie Curie?")
    refused = trajectory.steps[1]
    assert_a_hop(refused, "Warsaw", "(river): Warsaw is the capital of Poland.\nFind it:", "Warsaw")
    assert refused.observation.endswith(
        'Read alone for the question, its document answers "Vistula": The Vistula river flows through Warsaw.'
    )
    read = backend.calls[2]  # its own prompt: that document and the question, nothing of the run
    assert read.prompt.startswith("<|im_start|>system\nYou answer a question from one document.")
    assert "Document:\nWarsaw: Warsaw is the capital of Poland." in read.prompt and "Marie Curie was" not in read.prompt
    assert "Warsaw is a step on the way to the answer." in read.prompt
    assert '"Final: "' in read.grammar and "Thought" not in read.grammar and '" Vistula"' in read.grammar
    assert '"Warsaw"' not in read.grammar  # the refused answer is no answer of the read either
    own = backend.count_tokens("Thought: b\nFinal: Warsaw") + backend.count_tokens("Final: Vistula")
    assert refused.usage.generated_tokens == own  # the read is booked on the step it serves
    assert "Read alone for the question" in backend.calls[3].prompt
    assert trajectory.answer == "Vistula"


def test_read_hop_shows_nothing_the_first_checks_would_refuse(tiny_index) -> None:
    outputs = [
        "Thought: a\nAction: search[Warsaw]",
        "Thought: b\nFinal: Warsaw",
        "Final: Poland",  # read alone, the model names what the question already says
        "Final: Marie Curie",  # asked once more without it, again
        "Thought: c\nFinal: Vistula",
    ]
    agent, backend = make(tiny_index, outputs, read_hop=True, exclude_refused=True)
    trajectory = agent.run("Which river of Poland flows through the birth city of Marie Curie?")
    assert len(backend.calls[2].prompt) and "Read alone" not in trajectory.steps[1].observation
    assert backend.calls[3].prompt == backend.calls[2].prompt and trajectory.answer == "Vistula"
    assert "\nIts own document:\n[1] Warsaw: " in trajectory.steps[1].observation
    without, plain = make(tiny_index, [outputs[0], outputs[1], *outputs[4:]], exclude_refused=True)
    assert without.run("Which river flows through the birth city of Marie Curie?").answer == "Vistula"
    assert len(plain.calls) == 3  # read_hop off: no call of its own


def test_asks_for_lets_an_answer_of_that_kind_stand(tiny_index) -> None:
    agent, _ = make(tiny_index, ["Thought: a\nAction: search[Vistula Warsaw]", "Thought: b\nFinal: Vistula"])
    trajectory = agent.run("Which river flows through Warsaw?")
    assert trajectory.answer == "Vistula" and len(trajectory.steps) == 2


# ---- compare -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "dimension", "larger_wins", "options"),
    [
        ("Who was born first, Marie Curie or Pierre Curie?", "time", False, ("Marie Curie", "Pierre Curie")),
        ("Which is higher, Mount Kilimanjaro or Mount Elbrus?", "size", True, ("Mount Kilimanjaro", "Mount Elbrus")),
        ("Which opened first, the Golden Gate Bridge or the Sydney Harbour Bridge?", "time", False,
         ("Golden Gate Bridge", "Sydney Harbour Bridge")),
        ("Which club was founded earlier, Manchester United or Liverpool F.C.?", "time", False,
         ("Manchester United", "Liverpool F.C.")),
        ("Who is younger, Keith Bostic or Jerry Glanville?", "time", True, ("Keith Bostic", "Jerry Glanville")),
        ("Which river is shorter, the Vistula or the Oder?", "size", False, ("Vistula", "Oder")),
        ("Which magazine was started first Arthur's Magazine or First for Women?", "time", False,
         ("Arthur's Magazine", "First for Women")),  # no comma: the options follow the comparative
    ],
)  # fmt: skip
def test_what_a_comparing_question_compares(question, dimension, larger_wins, options) -> None:
    how = comparison(question)
    assert how is not None
    assert (how.dimension, how.larger_wins, how.options) == (dimension, larger_wins, options)


@pytest.mark.parametrize(
    "question",
    [
        "Which band, Letters to Cleo or Screaming Trees, is better?",  # a comparative that measures nothing
        "Were Marie Curie and Pierre Curie born in the same city?",  # no options
        "Which is Polish, Marie Curie or Pierre Curie?",  # no comparative
    ],
)
def test_questions_that_compare_nothing_measurable(question: str) -> None:
    assert comparison(question) is None


@pytest.mark.parametrize(
    ("question", "larger_wins", "counted"),
    [
        ("Which element has the higher atomic number, gold or mercury?", True, ("atomic", "number")),
        ("Which band, Letters to Cleo or Screaming Trees, had more members?", True, ("members",)),
        ("Which city has a smaller population, Oslo or Bergen?", False, ("population",)),
        ("Which has fewer moons than the other, Mars or Venus?", False, ("moons",)),
    ],
)
def test_a_comparative_followed_by_what_it_counts_compares_counts(question, larger_wins, counted) -> None:
    how = comparison(question)
    assert how is not None and (how.dimension, how.larger_wins, how.counted) == ("count", larger_wins, counted)
    assert comparison("Which is higher, Mount Kilimanjaro or Mount Elbrus?").dimension == "size"  # nothing counted
    assert comparison("Which mountain is higher above sea level, Denali or Aconcagua?").dimension == "size"


def test_counts_are_read_after_or_before_what_they_count() -> None:
    atomic = comparison("Which element has the higher atomic number, gold or mercury?")
    people = comparison("Which city has a larger population, Oslo or Bergen?")
    members = comparison("Which band, Letters to Cleo or Screaming Trees, had more members?")
    assert atomic is not None and people is not None and members is not None
    gold = "Gold was known in 3000 BC. Gold is the chemical element with the symbol Au and atomic number 79."
    assert measure(gold, atomic).value == 79 and measure(gold, atomic).text.startswith("Gold is the chemical")
    assert measure("Its atomic number is 84.", atomic).value == 84
    assert measure("Oslo had a population of 709,037 in 2020.", people).value == 709_037
    assert measure("Bergen has a population of about 285,900.", people).value == 285_900
    assert measure("The region had 1.2 million population.", people).value == 1_200_000
    assert measure("The band had 5 members in 1990.", members).value == 5
    assert measure("In 2010 the population was 2011.", people) is None  # written like a year: no count
    assert measure("The band formed with four members.", members) is None  # a number word is not read


def test_numbers_are_read_from_the_sentence_of_the_event_compared() -> None:
    born = comparison("Who was born first, Ada or Bo?")
    sank = comparison("Which ship sank first, Ada or Bo?")
    high = comparison("Which is higher, Ada or Bo?")
    assert born is not None and sank is not None and high is not None
    text = "Ada was a liner launched in 1906. On 7 May 1915 she was torpedoed and sank. She was born in 1900."
    assert measure(text, sank).value == 1915
    assert measure(text, born).value == 1900
    assert measure("Ada was built in 1901 and launched in 1906.", sank).value == 1901  # no cue: the first year
    assert measure("Ada rises to 5,895 metres. It was climbed in 1889.", high).value == 5895
    assert measure("Bo is about 19,341 ft high.", high).value == pytest.approx(5895.1, abs=0.1)
    assert measure("The Bo is 1,047 kilometres long.", high).value == 1_047_000
    assert measure("No numbers at all here.", high) is None
    assert measure("Its 1,500 members met 300 times.", born) is None  # neither is a year
    first, second = measure("Ada 1867.", born), measure("Bo 1859.", born)
    assert winner(born, first, second) == 1 and winner(born, first, first) is None


def test_compare_refuses_the_option_whose_number_loses_and_shows_both(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Pierre Curie born]",
            "Thought: b\nFinal: Marie Curie",
            "Thought: c\nFinal: Pierre Curie",
        ],
    )
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "compare" and refused.details.refusal.answer == "Marie Curie"
    assert refused.observation.startswith("Compare the numbers: Marie Curie 1867 (")
    assert "Pierre Curie 1859 (Pierre Curie was a French physicist born in Paris in 1859)." in refused.observation
    assert "1859 is earlier than 1867." in refused.observation
    assert "Compare the numbers" in backend.calls[2].prompt
    assert trajectory.answer == "Pierre Curie" and trajectory.steps[2].details.refusal is None


def test_compare_refuses_the_element_with_the_lower_atomic_number(tmp_path) -> None:
    index = index_of(
        tmp_path / "elements",
        {
            "gold.md": "# Gold\n\nGold is the chemical element with the symbol Au and atomic number 79.",
            "mercury.md": "# Mercury (element)\n\nMercury is a chemical element with the symbol Hg and atomic number "
            "80. It is liquid at room temperature.",
        },
    )
    outputs = ["Thought: a\nAction: search[gold mercury atomic number]", "Thought: b\nFinal: Gold"]
    agent, _ = make(index, [*outputs, "Thought: c\nFinal: Mercury"])
    trajectory = agent.run("Which element has the higher atomic number, gold or mercury?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "compare" and refused.details.refusal.answer == "Gold"
    assert refused.observation.startswith("Compare the numbers: gold 79 (Gold is the chemical element")
    assert (
        "mercury 80 (Mercury is a chemical element with the symbol Hg and atomic number 80). 80 is more than 79."
        in (refused.observation)
    )
    assert trajectory.answer == "Mercury"


def test_compare_lets_the_winning_option_stand(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie Pierre Curie born]", "Thought: b\nFinal: Pierre Curie"],
    )
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    assert trajectory.answer == "Pierre Curie" and len(trajectory.steps) == 2


def test_the_last_step_of_a_comparison_may_only_write_the_option_that_wins(tiny_index) -> None:
    # The last step may only answer and no check sees it: the documents' numbers decide its grammar instead.
    outputs = ["Thought: a\nAction: search[Marie Curie Pierre Curie born]", "Thought: b\nFinal: Pierre Curie"]
    agent, backend = make(tiny_index, outputs, exclude_refused=True, max_steps=2)
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    last = backend.calls[1].grammar
    assert '"Pierre Curie"' in last and "Marie Curie" not in last
    assert '"Marie Curie"' in backend.calls[0].grammar or "Final" not in backend.calls[0].grammar
    assert trajectory.answer == "Pierre Curie" and trajectory.steps[1].final_only
    assert trajectory.steps[1].details.checked == {"Marie Curie": "1867", "Pierre Curie": "1859"}
    assert trajectory.steps[1].details.refusal is None


def test_a_last_step_is_left_whole_where_no_comparison_decides_it(tiny_index) -> None:
    outputs = ["Thought: a\nAction: search[Marie Curie Pierre Curie born]", "Thought: b\nFinal: Marie Curie"]
    for question, exclude in [
        ("Who was born first, Marie Curie or Pierre Curie?", False),  # without exclude_refused
        ("Which physicist studied radium, Marie Curie or Pierre Curie?", True),  # compares nothing measurable
    ]:
        agent, backend = make(tiny_index, outputs, exclude_refused=exclude, max_steps=2)
        trajectory = agent.run(question)
        last = backend.calls[1].grammar
        assert '"Pierre Curie"' in last and '"Marie Curie"' in last
        assert trajectory.answer == "Marie Curie" and trajectory.steps[1].details.checked is None


# ---- a choice's options ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "options"),
    [
        ("Which element has the higher atomic number, polonium or radium?", ("polonium", "radium")),
        ("Which dog's ancestors include Gordon and Irish Setters: the Manchester Terrier or the Scotch Collie?",
         ("Manchester Terrier", "Scotch Collie")),
        ("who is younger Keith Bostic or Jerry Glanville ?", ("Keith Bostic", "Jerry Glanville")),
        ('Which movie was filmed first "The Guest" or "You\'re Next"?', ("The Guest", "You're Next")),
        ("Is Velvetpark or Shape magazine written more for a queer readership?", None),  # "or" before the comparative
        ("Are both Lygodium or Maxillaria a genus of orchids?", None),
        ("In which city was Marie Curie born?", None),
    ],
)  # fmt: skip
def test_choice_options_are_read_off_the_question(question: str, options) -> None:
    assert choice_options(question) == options


def test_a_choice_with_options_can_only_be_answered_with_one_of_them() -> None:
    form = answer_form("Which element has the higher atomic number, polonium or radium?")
    assert form.kind == "choice" and form.options == ("polonium", "radium")
    grounding = form.grounding()
    grounding.add("[1] Radium: Radium has the atomic number 88.")  # what is read does not become an answer
    checker = GbnfChecker(build_grammar(GrammarSpec(tools=(ToolSpec("search"),), grounded=True), grounding).gbnf)
    answers = [("radium", True), ("Radium", True), ("Polonium", True), ("number", False), ("RADIUM", False),
               ("88", False), ("radium or polonium", False), ("yes", False)]  # fmt: skip
    for answer, expected in answers:
        assert grounding.accepts(answer) is expected, answer
        assert checker.accepts(f"Thought: x\nFinal: {answer}\n") is expected, answer
    grounding.exclude("Polonium")
    assert not grounding.accepts("polonium") and grounding.accepts("Radium")
    grounding.exclude("radium")  # the last option left stays
    assert grounding.accepts("radium")
    capital = answer_form("Which river is longer, the River Severn or the River Thames?").grounding()
    assert capital.accepts("River Severn") and not capital.accepts("river Severn")  # never lower-cased


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("Where is the company that Sachin Warrier worked for as a software engineer headquartered?", ("company",)),
        ("Ralph Hefferline was a psychology professor at a university that is located in what city?", ("university",)),
        ("Which river flows through the city where the opera Aida was first performed?", ("city",)),
        ("At the mouth of which river stands the city where RMS Titanic was built?", ("city",)),
        ("What is the county seat of the county where East Lempster, New Hampshire is located?", ("county",)),
        ("What is the name of the singer whose song was the lead single of Confessions?", ()),  # asks for it
        ("Who was the actor that played Rick Blaine?", ()),
        ("Which band is a band that formed in Leeds in 1990?", ()),  # the kind asked for
        ("Ed Oxenbould plays Tyler in a film directed by which famous director?", ()),  # "by" names no kind
        ("Where does the Vermont team that won in 1990 play?", ()),  # a name, not a kind
        ("Which river flows through Warsaw?", ()),
        ("Is the city where Chopin was born in Poland?", ()),  # only open questions describe hops
        ("What is the mascot of the oldest private university in Georgia?", ("university",)),  # X of the NOUN
        ("What was the capital of the empire?", ("empire",)),
        ("What is the name of the oldest private university in Georgia?", ()),  # asks for it
        ("What is the title of the longest river in Europe?", ()),
        ("What is the capital of the United States?", ()),  # a name, not a kind
        ("What is the largest city of the state?", ()),  # the thing asked for is more than one word
    ],
)
def test_the_entities_a_question_describes_on_the_way(question: str, kinds: tuple[str, ...]) -> None:
    assert described(answer_form(question)) == kinds


def test_only_what_a_first_sentence_says_its_subject_is_counts_as_its_kind() -> None:
    form = answer_form("Ralph Hefferline was a psychology professor at a university that is located in what city?")
    columbia = (
        "Columbia University (officially Columbia University in the City of New York) is a private Ivy League "
        "research university in Upper Manhattan, New York City."
    )
    assert description_in(form, columbia) == "university" and not predicate_describes(form, columbia)
    fight_song = answer_form("What is the fight song of the university whose main campus is in Lawrence, Kansas?")
    assert description_in(fight_song, "Kansas Song is a fight song of the University of Kansas.") is None
    company = answer_form("Where is the company that Sachin Warrier worked for headquartered?")
    tcs = "Tata Consultancy Services Limited (TCS) is an Indian multinational IT service and consulting company."
    assert description_in(company, tcs) == "company"
    assert description_in(company, "Mumbai is the capital city of Maharashtra.") is None


def test_described_refuses_the_entity_on_the_way_and_takes_it_out(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Vistula Warsaw]",
            "Thought: b\nFinal: Vistula",  # the river the question describes, not where it ends
            "Thought: c\nFinal: Baltic Sea",
        ],
        exclude_refused=True,
    )
    trajectory = agent.run("Where does the river that flows through Warsaw end?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "described" and refused.details.refusal.answer == "Vistula"
    assert refused.observation.startswith(
        "Vistula is the river the question describes, a step on the way: The Vistula is the longest river in "
        "Poland, about 1,047 kilometres long.\nFind what the question asks about it:"
    )
    assert "\nIts own document:\n[1] Vistula: " in refused.observation
    assert not GbnfChecker(backend.calls[2].grammar).accepts("Thought: c\nFinal: Vistula\n")
    assert trajectory.answer == "Baltic Sea"


def test_a_refusal_that_shows_the_answers_document_leaves_the_next_step_free(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Vistula Warsaw]", "Thought: b\nFinal: Vistula", "Thought: c\nFinal: Baltic Sea"],
        exclude_refused=True,
        search_after_refusal=True,
    )
    trajectory = agent.run("Where does the river that flows through Warsaw end?")
    assert trajectory.steps[1].details.refusal.reason == "described"
    assert GbnfChecker(backend.calls[2].grammar).accepts("Thought: c\nFinal: Baltic Sea\n")
    assert trajectory.answer == "Baltic Sea"


def test_described_lets_the_described_entity_stand_when_the_question_asks_for_it(tiny_index) -> None:
    agent, _ = make(tiny_index, ["Thought: a\nAction: search[Vistula Warsaw]", "Thought: b\nFinal: Vistula"])
    trajectory = agent.run("What is the name of the river that flows through Warsaw?")
    assert trajectory.answer == "Vistula" and len(trajectory.steps) == 2


# ---- yes/no questions about two things: sides and same ---------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "pair"),
    [
        ("Are both Duke Energy and Affiliated Managers Group based in Massachusetts?",
         ("both", "Duke Energy", "Affiliated Managers Group based in Massachusetts")),
        ("Are Ruggero Deodato from Italy, and Mexican Alejandro Springall, both film directors?",
         ("both", "Ruggero Deodato from Italy", "Mexican Alejandro Springall")),
        ("Are both Lygodium or Maxillaria a genus of orchids?", ("both", "Lygodium", "Maxillaria a genus of orchids")),
        ("Were Leo Tolstoy and Fyodor Dostoevsky born in the same year?",
         ("same", "Leo Tolstoy", "Fyodor Dostoevsky born in the same year")),
        ("Is Warsaw the capital of Poland?", None),  # one thing
        ("Were Marie Curie and Pierre Curie married?", None),  # neither "both" nor "same": a relation
        ("Are Marie Curie and Pierre Curie of different nationalities?", None),
        ("Who was born first, Marie Curie or Pierre Curie?", None),  # not a yes/no question
    ],
)  # fmt: skip
def test_the_two_things_a_yes_no_question_asks_about(question: str, pair) -> None:
    assert paired_subjects(question) == pair


def test_a_refused_yes_leaves_only_no() -> None:
    grounding = Grounding(["The Vistula flows through Warsaw."])
    grounding.exclude("Yes")
    assert not grounding.accepts("yes") and not grounding.accepts("Yes")
    assert grounding.accepts("no") and grounding.accepts("No") and grounding.accepts("Warsaw")
    checker = GbnfChecker(build_grammar(SPEC, grounding).gbnf)
    assert not checker.accepts("Thought: x\nFinal: Yes\n") and checker.accepts("Thought: x\nFinal: No\n")
    grounding.exclude("no")  # it would leave neither: ignored
    assert grounding.accepts("no") and not grounding.accepts("yes")
    options = answer_form("Is Warsaw or Gdansk the capital?").grounding()
    options.exclude("no")
    assert options.accepts("yes") and not options.accepts("No") and options.accepts("Warsaw")


def test_a_one_word_reply_parses_to_the_word() -> None:
    parser = WordParser(("yes", "no"))
    assert parser.gbnf == 'root ::= "yes" | "no"\n'
    assert parser.parse("yes") == "yes" and parser.parse(" No.\n") == "no"
    with pytest.raises(StepParseError, match="expected yes or no"):
        parser.parse("maybe")


def test_same_year_reads_both_years_off_the_question() -> None:
    how = same_year("Were Marie Curie and Pierre Curie born in the same year?")
    assert how is not None and how.options == ("Marie Curie", "Pierre Curie born in the same year")
    assert how.cues == frozenset(["born"])
    assert same_year("Were Marie Curie and Pierre Curie born in the same city?") is None


def test_same_refuses_a_yes_when_the_years_differ_and_leaves_no(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Pierre Curie born]",
            "Thought: b\nFinal: Yes",
            "Thought: c\nFinal: No",
        ],
        exclude_refused=True,
    )
    trajectory = agent.run("Were Marie Curie and Pierre Curie born in the same year?")
    refused = trajectory.steps[1].details
    assert refused.refusal.reason == "same" and refused.checked == {"Marie Curie": "1867", "Pierre Curie": "1859"}
    assert trajectory.steps[1].observation.startswith("Compare the years: Marie Curie 1867 (")
    assert "Different years, so the answer is no." in trajectory.steps[1].observation
    assert not GbnfChecker(backend.calls[2].grammar).accepts("Thought: c\nFinal: Yes\n")
    assert trajectory.answer == "No" and len(backend.calls) == 3  # no model call: the years decide


def test_same_values_refuses_a_yes_when_each_document_alone_gives_another_city(tiny_index) -> None:
    outputs = [
        "Thought: a\nAction: search[Marie Curie Pierre Curie born]",
        "Thought: b\nFinal: Yes",
        "Final: Warsaw",  # Marie Curie's city, on her document alone
        "Final: Paris",  # Pierre Curie's
        "different",  # are Warsaw and Paris the same city?
        "Thought: c\nFinal: No",
    ]
    agent, backend = make(tiny_index, outputs, exclude_refused=True)
    trajectory = agent.run("Were Marie Curie and Pierre Curie born in the same city?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "same"
    assert refused.details.checked == {"Marie Curie": "Warsaw", "Pierre Curie": "Paris"}
    read = backend.calls[2]  # one document and what to read off it, nothing of the run
    assert (
        "Document:\nMarie Curie: Marie Curie was a physicist" in read.prompt and "Pierre Curie was" not in read.prompt
    )
    assert "What city does the document give for Marie Curie?" in read.prompt
    assert '" Warsaw"' in read.grammar and "Paris" not in read.grammar  # its spans only
    judge = backend.calls[4]
    assert (
        judge.grammar == 'root ::= "same" | "different"\n'
        and "Marie Curie: Warsaw\nPierre Curie: Paris" in judge.prompt
    )
    assert refused.observation.startswith(
        "Read one document at a time: Marie Curie: Warsaw (Marie Curie was a physicist and chemist born in Warsaw"
    )
    assert "Not the same city, so the answer is no." in refused.observation
    assert refused.usage.generated_tokens > backend.count_tokens("Thought: b\nFinal: Yes")  # the calls are booked
    assert not GbnfChecker(backend.calls[5].grammar).accepts("Thought: c\nFinal: Yes\n")
    assert trajectory.answer == "No"


def test_same_values_equal_as_answers_need_no_judging_call(tiny_index) -> None:
    outputs = [
        "Thought: a\nAction: search[Marie Curie Pierre Curie]",
        "Thought: b\nFinal: No",
        "Final: physicist",
        "Final: physicist",  # the same answer: yes without asking
        "Thought: c\nFinal: Yes",
    ]
    agent, backend = make(tiny_index, outputs, exclude_refused=True)
    trajectory = agent.run("Were Marie Curie and Pierre Curie of the same profession?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "same" and "The same profession, so the answer is yes." in (
        refused.observation
    )
    assert len(backend.calls) == 5 and trajectory.answer == "Yes"


def test_same_values_lets_the_answer_stand_when_a_side_reads_nothing(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie Pierre Curie]", "Thought: b\nFinal: Yes", "Final: Warsaw", ""],
    )
    trajectory = agent.run("Were Marie Curie and Pierre Curie born in the same city?")
    assert trajectory.answer == "Yes" and trajectory.steps[1].details.refusal is None
    assert len(backend.calls) == 4  # no judging call without both sides


def sides_run(index, question: str, first: str, second: str):
    """A run whose Final `first` the side calls refuse (Marie Curie "no", Pierre Curie "yes"), then `second`."""
    agent, backend = make(
        index,
        [
            "Thought: a\nAction: search[Marie Curie Pierre Curie]",
            f"Thought: b\nFinal: {first}",
            "no",  # Marie Curie, on her document alone
            "yes",  # Pierre Curie
            f"Thought: c\nFinal: {second}",
        ],
        exclude_refused=True,
    )
    return agent.run(question), backend


def test_sides_asks_the_model_about_each_document_alone(tiny_index) -> None:
    question = "Are both Marie Curie and Pierre Curie French physicists?"
    trajectory, backend = sides_run(tiny_index, question, "Yes", "No")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "sides"
    assert refused.details.checked == {"Marie Curie": "no", "Pierre Curie": "yes"}
    side = backend.calls[2]
    assert side.grammar == 'root ::= "yes" | "no"\n' and side.max_tokens == 4
    assert "Marie Curie: Marie Curie was a physicist and chemist born in Warsaw" in side.prompt
    assert "Pierre Curie" not in side.prompt.split("Question:")[0]  # one document only
    assert "Answer for Pierre Curie alone" in backend.calls[3].prompt
    assert refused.observation.startswith("Checked one document at a time: Marie Curie: no (")
    assert "So the answer is no." in refused.observation
    assert refused.usage.prompt_tokens > 0  # the two side calls are booked on the step
    assert not GbnfChecker(backend.calls[4].grammar).accepts("Thought: c\nFinal: Yes\n")
    assert trajectory.answer == "No"


def test_sides_lets_an_answer_both_sides_agree_with_stand(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie Pierre Curie]", "Thought: b\nFinal: yes", "yes", "yes"],
    )
    trajectory = agent.run("Are both Marie Curie and Pierre Curie physicists?")
    assert trajectory.answer == "yes" and len(trajectory.steps) == 2
    assert trajectory.steps[1].details.refusal is None
    assert trajectory.steps[1].details.checked == {"Marie Curie": "yes", "Pierre Curie": "yes"}
    again = type(trajectory).from_json(trajectory.to_json())
    assert again.steps[1].details.checked == trajectory.steps[1].details.checked


def test_sides_still_judges_an_answer_repeated_after_one_side(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw chemist]",  # Marie Curie and Warsaw, not Pierre Curie
            "Thought: b\nFinal: Yes",  # one_side: Pierre Curie is shown
            "Thought: c\nFinal: Yes",  # the same answer again, now judged by sides
            "no",
            "yes",
            "Thought: d\nFinal: No",
        ],
        exclude_refused=True,
    )
    trajectory = agent.run("Are both Marie Curie and Pierre Curie French?")
    reasons = [s.details.refusal.reason if s.details and s.details.refusal else None for s in trajectory.steps]
    assert reasons == [None, "one_side", "sides", None] and trajectory.answer == "No"


def test_compare_still_weighs_an_answer_repeated_after_one_side(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw chemist]",  # Marie Curie and Warsaw, not Pierre Curie
            "Thought: b\nFinal: Marie Curie",  # one_side: Pierre Curie is shown
            "Thought: c\nFinal: Marie Curie",  # the same answer again: compare weighs it now
            "Thought: d\nFinal: Pierre Curie",
        ],
        exclude_refused=True,
    )
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    reasons = [s.details.refusal.reason if s.details and s.details.refusal else None for s in trajectory.steps]
    assert reasons == [None, "one_side", "compare", None] and trajectory.answer == "Pierre Curie"


# ---- open questions about what two things have in common: shared ----------------------------------------------


@pytest.mark.parametrize(
    ("question", "pair"),
    [
        ("What occupation do Chris Menges and Aram Avakian share?", ("Chris Menges", "Aram Avakian")),
        ("What occupations do both Ian Hunter and Rob Thomas have?", ("Ian Hunter", "Rob Thomas")),
        ("Where are Teide National Park and Garajonay National Park located?",
         ("Teide National Park", "Garajonay National Park")),
        ("Eric Ambler and Carol Shields are both best Known for what profession?", ("Eric Ambler", "Carol Shields")),
        ("What nationality were social anthropologists Alfred Gell and Edmund Leach?",
         ("social anthropologists Alfred Gell", "Edmund Leach")),
        ("In which country are Teide National Park and Garajonay National Park?",
         ("Teide National Park", "Garajonay National Park")),
        ("Who was the writer of These Boots Are Made for Walkin' and who died in 2007?", None),  # a clause
        ("In which city was Marie Curie born?", None),
        ("What river flows through Warsaw and Gdansk?", None),  # no plural auxiliary before the pair
        ("What profession does John Lanchester and Alan Dean Foster have in common?",
         ("John Lanchester", "Alan Dean Foster")),  # "does", before "have in common"
        ("What city does Paul Clyne and David Soares share?", ("Paul Clyne", "David Soares")),
        ("Where does the hotel and casino located in which the album was recorded stand?", None),
    ],
)  # fmt: skip
def test_the_two_things_an_open_question_asks_what_they_share(question: str, pair) -> None:
    assert shared_subjects(question) == pair


def test_shared_refuses_an_answer_one_of_the_two_documents_does_not_hold(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie Pierre Curie]",
            "Thought: b\nFinal: chemist",  # Marie Curie's document says it, Pierre Curie's does not
            "Thought: c\nFinal: physicist",
        ],
        exclude_refused=True,
    )
    trajectory = agent.run("What occupation do Marie Curie and Pierre Curie share?")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "shared"
    assert refused.details.checked == {"Marie Curie": "yes", "Pierre Curie": "no"}
    assert refused.observation.startswith("chemist is not in the document of Pierre Curie, and the question asks")
    assert "[2] Pierre Curie: Pierre Curie was a French physicist born in Paris in 1859." in refused.observation
    assert not GbnfChecker(backend.calls[2].grammar).accepts("Thought: c\nFinal: chemist\n")  # excluded
    assert trajectory.answer == "physicist" and len(backend.calls) == 3  # no model call: the documents decide
    assert trajectory.steps[2].details.refusal is None


def test_shared_leaves_other_open_questions_alone(tiny_index) -> None:
    agent, _ = make(tiny_index, ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: chemist"])
    trajectory = agent.run("What was the occupation of Marie Curie besides physicist?")
    assert trajectory.answer == "chemist" and trajectory.steps[1].details.checked is None


def test_a_year_is_read_before_a_comma_but_not_from_a_decade() -> None:
    born = comparison("Who was born first, Ada or Bo?")
    assert measure("Ada's story began in 1865, when a mill was built.", born).value == 1865
    assert measure("In the late 1990s and 2000s it sold phones.", born) is None
    assert measure("It weighed 1865,000 tons and carried 1,200 people.", born) is None


def test_sides_picks_the_one_option_a_choice_holds_of(tiny_index) -> None:
    question = "Which physicist was born in Paris, Marie Curie or Pierre Curie?"
    trajectory, backend = sides_run(tiny_index, question, "Marie Curie", "Pierre Curie")
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "sides"
    assert "So the answer is Pierre Curie." in refused.observation
    assert not GbnfChecker(backend.calls[4].grammar).accepts("Thought: c\nFinal: Marie Curie\n")
    assert trajectory.answer == "Pierre Curie"


@pytest.mark.parametrize("replies", [("yes", "yes"), ("no", "no")])
def test_sides_lets_a_choice_stand_unless_exactly_one_option_holds(tiny_index, replies) -> None:
    agent, _ = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie Pierre Curie]", "Thought: b\nFinal: Marie Curie", *replies],
    )
    trajectory = agent.run("Which physicist was born in Paris, Marie Curie or Pierre Curie?")
    assert trajectory.answer == "Marie Curie" and len(trajectory.steps) == 2


def test_a_choice_that_compares_is_not_judged_side_by_side(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        ["Thought: a\nAction: search[Marie Curie Pierre Curie]", "Thought: b\nFinal: Marie Curie"],
    )
    trajectory = agent.run("Which physicist won more prizes, Marie Curie or Pierre Curie?")
    assert trajectory.answer == "Marie Curie" and len(backend.calls) == 2  # no side calls
    assert compares("Who is older, A or B?") and compares("Which band is the best, A or B?")
    assert not compares("Which writer was from England, A or B?")


def test_named_document_prefers_what_the_run_read_then_the_bare_title(tmp_path) -> None:
    documents = {
        "film.md": "# Giuseppe Verdi (film)\n\nGiuseppe Verdi is a 1938 Italian film.\n",
        "verdi.md": "# Giuseppe Verdi\n\nGiuseppe Verdi was an Italian opera composer.\n",
    }
    search = build_tools(index_of(tmp_path / "docs", documents)).get("search")
    title, head = search.named_document("Giuseppe Verdi and Ambroise Thomas")
    assert title == "Giuseppe Verdi" and head == "Giuseppe Verdi was an Italian opera composer."
    assert search.named_document("Giuseppe Verdi", prefer={"Giuseppe Verdi (film)"})[0] == "Giuseppe Verdi (film)"
    assert search.named_document("nothing named here") is None


def test_compare_reads_the_document_of_the_kind_the_question_names(tmp_path) -> None:
    documents = {
        "a-story.md": "# The Guest\n\nThe Guest is a short story first published in 1957.\n",
        "b-film.md": "# The Guest (film)\n\nThe Guest is a 2014 American thriller film.\n",
        "next.md": "# You're Next\n\nYou're Next is a 2011 American slasher film.\n",
    }
    index = index_of(tmp_path / "docs", documents)
    search = build_tools(index).get("search")
    assert search.document("The Guest").startswith("The Guest is a short story")
    film = search.document("The Guest", prefer=lambda title, text: "film" in title)
    assert film.startswith("The Guest is a 2014")
    agent, _ = make(index, ["Thought: a\nAction: search[The Guest You're Next]", "Thought: b\nFinal: You're Next"])
    trajectory = agent.run("Which movie was filmed first, The Guest or You're Next?")
    assert trajectory.answer == "You're Next" and len(trajectory.steps) == 2  # 2011 against the film's 2014
