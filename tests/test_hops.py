"""A run's hops (hops.py): searches for a name read in an earlier Observation that the question does not write, as
eval counts them, the HTML report marks them and `ask` prints them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import plain_flags

from offline_agent.backends import ScriptedBackend
from offline_agent.eval.html_report import report_data
from offline_agent.eval.run_data import RunData
from offline_agent.hops import Hop, bridge, hops, saved_hops
from offline_agent.steps import StepRecord

QUESTION = "Which river flows through the city where Marie Curie was born?"
CURIE = "[1] Marie Curie: Marie Curie was a physicist and chemist born in Warsaw in 1867."
WARSAW = "[1] Warsaw: Warsaw is the capital of Poland. The Vistula river flows through Warsaw."


def search(index: int, argument: str, observation: str, action: str = "search", **fields) -> StepRecord:
    return StepRecord(index=index, raw="", action=action, argument=argument, observation=observation, **fields)


def test_a_search_for_a_name_read_earlier_is_a_hop_and_the_question_s_own_search_is_not() -> None:
    steps = [
        search(0, "Which river flows through the city where Marie Curie was born?", CURIE),
        search(1, "Warsaw river", WARSAW),
        StepRecord(index=2, raw="", final="Vistula"),
    ]
    assert hops(QUESTION, steps) == [Hop(step=1, query="Warsaw river", bridge="Warsaw", read_at=0)]


def test_a_name_only_a_thought_states_is_no_hop() -> None:
    steps = [
        StepRecord(
            index=0,
            raw="",
            thought="Marie Curie was born in Krakow.",
            action="search",
            argument="Marie Curie",
            observation="[1] Marie Curie: Marie Curie was a physicist and chemist.",
        ),
        search(1, "Krakow river", "[1] Krakow: Krakow lies on the Vistula."),
    ]
    assert hops(QUESTION, steps) == []


def test_what_is_not_reading_gives_no_bridge() -> None:
    """A refusal's Observation may quote the model's own proposal, and a failed tool read nothing."""
    steps = [
        StepRecord(index=0, raw="", final="Krakow", observation="Refused: Krakow is not in what you read."),
        search(1, "Gdansk", "error: no such index", tool_error=True),
        StepRecord(index=2, raw="", action="calculator", argument="1+1", observation="Krakow 2"),
        search(3, "Krakow river", WARSAW),
    ]
    assert hops(QUESTION, steps) == []


def test_a_lookup_reads_but_is_no_search() -> None:
    steps = [
        search(0, "Marie Curie", CURIE),
        search(1, "born", "(result 1/1) She was born in Warsaw in 1867.", action="lookup"),
        search(2, "Warsaw", WARSAW, action="retrieve"),
    ]
    assert [(hop.step, hop.bridge, hop.read_at) for hop in hops(QUESTION, steps)] == [(2, "Warsaw", 0)]


def test_the_bridge_is_the_longest_read_run_of_new_words_without_function_words_at_its_ends() -> None:
    read = ["The Vistula river flows into the Baltic Sea near Gdansk.", "Warsaw is the capital of Poland."]
    assert bridge(QUESTION, "the Baltic Sea near Gdansk", read) == ("Baltic Sea near Gdansk", 0)
    assert bridge(QUESTION, "capital of Poland", read) == ("capital of Poland", 1)
    assert bridge(QUESTION, "the river", read) == ("", -1)  # "the" is a stop word, "river" the question's own
    assert bridge(QUESTION, "Baltic Sea", ["Baltics are seas"]) == ("", -1)  # whole words only
    assert bridge(QUESTION, "baltic SEA", read) == ("baltic SEA", 0)  # case aside; the query's own spelling kept


def test_saved_steps_give_the_same_hops() -> None:
    steps = [search(0, "Marie Curie", CURIE), search(1, "Warsaw river", WARSAW)]
    saved = [step.to_dict() for step in steps]
    assert saved_hops(QUESTION, json.loads(json.dumps(saved))) == hops(QUESTION, steps)


def test_the_html_report_marks_the_hop_on_its_step() -> None:
    steps = [
        search(0, "Marie Curie", CURIE),
        search(1, "Warsaw river", WARSAW),
        StepRecord(index=2, raw="", final="Vistula"),
    ]
    row = {
        "id": "q1",
        "question": QUESTION,
        "prediction": "Vistula",
        "em": 1.0,
        "f1": 1.0,
        "trajectory": {"steps": [step.to_dict() for step in steps]},
    }
    data = report_data([RunData(name="run", path=Path("run"), config={}, rows=[row], summary={})])
    marked = [step.get("hop") for step in data["traj"][0]["steps"]]
    assert marked == [None, {"bridge": "Warsaw", "read_at": 0}, None]


def test_ask_prints_each_hop_under_its_search_and_counts_them(
    tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from offline_agent.cli import _register, cli

    _register()
    backend = ScriptedBackend()
    monkeypatch.setattr("offline_agent.backends.registry.build_backend", lambda *args, **kwargs: backend)
    backend.enqueue(
        "Thought: First Marie Curie.\nAction: search[Marie Curie]",
        "Thought: She was born in Warsaw.\nAction: search[Warsaw river]",
        "Thought: The Vistula flows through Warsaw.\nFinal: Vistula",
    )
    arguments = ["ask", QUESTION, "--corpus", str(tiny_corpus), *plain_flags()]
    result = CliRunner().invoke(cli, arguments, prog_name="offline-agent", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "Vistula"
    assert "… running search[Warsaw river]\nhop 1: Warsaw (read in step 1)\n" in result.stderr
    assert "… running search[Marie Curie]\nObservation:" in result.stderr  # the question's own names: no hop
    assert "stop: final after 3 steps, 1 hop, " in result.stderr
