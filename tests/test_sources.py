"""The passages an answer rests on: found in real trajectories (the scripted backend through runner.Session, and
the small test model with grounded answers), shown by `ask` and `chat`, and carried by --json, the MCP `ask`
tool and eval's results rows; trajectories written before sources existed read back as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import ROOT, plain_flags

from offline_agent.agents import RunConfig, agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.retrieval import open_corpus
from offline_agent.runner import Session
from offline_agent.sources import NOT_WRITTEN, attach_sources, find_sources, format_sources
from offline_agent.steps import Trajectory

QUESTION = "Into which sea does the Vistula flow?"


def run(index, *outputs: str, config: RunConfig | None = None, question: str = QUESTION) -> Trajectory:
    session = Session(backend=ScriptedBackend(list(outputs)), index=index, corpus="tiny")
    return session.ask(question, config or RunConfig(max_steps=4))


def test_the_source_is_the_passage_whose_shown_text_holds_the_answer(tiny_index, tiny_corpus: Path) -> None:
    trajectory = run(tiny_index, "Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the baltic  SEA")
    sources = find_sources(trajectory, tiny_index)
    assert [(s.title, s.path, s.heading, s.line, s.page, s.step) for s in sources] == [
        ("Vistula", str(tiny_corpus / "vistula.md"), ("Vistula",), 3, 0, 1)
    ]
    assert sources[0].sentence == "It flows into the Baltic Sea near Gdansk."  # case and spacing aside


def test_every_passage_shown_holding_the_answer_is_a_source_once(tiny_index) -> None:
    trajectory = run(
        tiny_index,
        "Thought: a\nAction: search[Nobel Prize Physics 1903]",
        "Thought: b\nAction: search[Curie 1903 Nobel]",
        "Thought: c\nFinal: 1903",
    )
    sources = find_sources(trajectory, tiny_index)
    assert sorted(s.title for s in sources) == ["Marie Curie", "Pierre Curie"]
    assert [s.step for s in sources] == [1, 1]  # the second search showed them again: each is listed once
    assert all("1903" in s.sentence for s in sources)


@pytest.mark.parametrize(
    ("final", "why"),
    [
        ("the North Sea", "not written in any passage shown"),
        ("Baltic Seas", "only on a word boundary"),
        ("yes", "a yes or no is never a span"),
    ],
)
def test_an_answer_not_written_in_what_was_shown_has_no_source(tiny_index, final: str, why: str) -> None:
    trajectory = run(tiny_index, "Thought: a\nAction: search[Vistula sea]", f"Thought: b\nFinal: {final}")
    assert find_sources(trajectory, tiny_index) == [], why
    attach_sources(trajectory, tiny_index)
    assert trajectory.sources == [] and format_sources(trajectory) == [f"Sources: {NOT_WRITTEN}."]


def test_an_answer_read_from_a_lookup_rests_on_the_looked_up_document(tmp_path: Path) -> None:
    filler = " ".join(f"The quay has berth number {n} for visiting boats." for n in range(20))
    (tmp_path / "kessa.md").write_text(f"# Kessa\n\n{filler} The lighthouse was painted red in 1911.\n")
    index = open_corpus(tmp_path)
    trajectory = run(
        index,
        "Thought: a\nAction: search[Kessa quay]",
        "Thought: b\nAction: lookup[painted]",
        "Thought: c\nFinal: red",
        question="What colour is the Kessa lighthouse?",
    )
    assert "painted" not in trajectory.steps[0].observation  # the search showed the passage's head only
    assert "(Result 1 / 1) The lighthouse was painted red in 1911." in trajectory.steps[1].observation
    (source,) = find_sources(trajectory, index)
    assert (source.title, source.step, source.sentence) == ("Kessa", 2, "The lighthouse was painted red in 1911.")


def test_a_manual_page_source_has_its_heading_path_and_line(tmp_path: Path) -> None:
    (tmp_path / "rope.html").write_bytes((ROOT / "tests" / "retrieval" / "html_pages" / "docbook.html").read_bytes())
    index = open_corpus(tmp_path)
    trajectory = run(index, "Thought: a\nAction: search[rope thickness frayed]", "Thought: b\nFinal: 16 millimetres")
    attach_sources(trajectory, index)
    (source,) = trajectory.sources
    assert source["heading"] == ["4.2. Mooring Lines", "4.2.1. Rope"] and source["line"] == 7
    assert source["sentence"] == "Lines must be at least 16 millimetres thick."
    assert format_sources(trajectory) == [
        "Sources:",
        f"  [1] {tmp_path / 'rope.html'}, line 7",
        "      4.2. Mooring Lines > 4.2.1. Rope",
        '      "Lines must be at least 16 millimetres thick."',
    ]


def test_sources_round_trip_and_old_lines_read_back_without_them(tiny_index) -> None:
    trajectory = attach_sources(
        run(tiny_index, "Thought: a\nAction: search[Vistula]", "Thought: b\nFinal: Gdansk"), tiny_index
    )
    again = Trajectory.from_json(trajectory.to_json())
    assert again == trajectory and again.sources and again.sources[0]["title"] == "Vistula"
    old = json.loads(trajectory.to_json())
    del old["sources"]  # a line written before sources existed
    back = Trajectory.from_json(json.dumps(old))
    assert back.sources is None and "sources" not in json.loads(back.to_json())
    assert format_sources(back) == []


def test_ask_prints_the_sources_under_the_answer(tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from offline_agent.cli import _register, cli

    _register()
    backend = ScriptedBackend()
    monkeypatch.setattr("offline_agent.backends.registry.build_backend", lambda *args, **kwargs: backend)
    backend.enqueue("Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the Baltic Sea")
    args = ["ask", QUESTION, "--corpus", str(tiny_corpus), *plain_flags(), "-q"]
    result = CliRunner().invoke(cli, args, prog_name="offline-agent")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "the Baltic Sea\n\nSources:\n"
        f"  [1] {tiny_corpus / 'vistula.md'}, line 3\n"
        "      Vistula\n"
        '      "It flows into the Baltic Sea near Gdansk."\n'
    )
    backend.enqueue("Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the Baltic Sea")
    result = CliRunner().invoke(cli, [*args, "--json"], prog_name="offline-agent")
    data = json.loads(result.stdout)
    assert [s["title"] for s in data["sources"]] == ["Vistula"] and Trajectory.from_dict(data).sources == data[
        "sources"
    ]
    backend.enqueue("Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the Baltic Sea")
    chat = CliRunner().invoke(cli, ["chat", "--corpus", str(tiny_corpus), *plain_flags()], input=f"{QUESTION}\n")
    assert chat.stdout == "the Baltic Sea\n"  # one line per answer: the sources go to stderr with the steps
    assert f"  [1] {tiny_corpus / 'vistula.md'}, line 3" in chat.stderr


def test_the_mcp_ask_tool_and_eval_rows_carry_the_sources(tiny_corpus: Path, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[test]'")
    from offline_agent.mcp_server import IndexSet, OfflineAgentTools, ServerSettings

    backend = ScriptedBackend(["Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the Baltic Sea"])
    tools = OfflineAgentTools(
        IndexSet([str(tiny_corpus)]), ServerSettings(settings=agent_settings("react", max_steps=3)), backend=backend
    )
    result = tools.ask(QUESTION)
    assert (
        [s["title"] for s in result["sources"]] == ["Vistula"] == [s["title"] for s in result["trajectory"]["sources"]]
    )

    from offline_agent.cli import _register, cli

    _register()
    monkeypatch.setattr("offline_agent.backends.registry.build_backend", lambda *args, **kwargs: backend)
    backend.enqueue("Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the Baltic Sea")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": QUESTION, "answer": "Baltic Sea"}) + "\n")
    out = tmp_path / "run"
    args = ["eval", str(questions), "--pool", str(tiny_corpus), "--out", str(out), *plain_flags(), "-q"]
    finished = CliRunner().invoke(cli, args, prog_name="offline-agent")
    assert finished.exit_code == 0, finished.output
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert [s["title"] for s in row["sources"]] == ["Vistula"] and row["sources"][0]["sentence"].endswith("Gdansk.")


@pytest.mark.model
def test_a_grounded_answer_of_the_real_model_rests_on_passages_it_was_shown(small_backend) -> None:
    """SmolLM2 with the product's answer settings (grounded: the answer is a span of what the searches returned) on
    the sample corpus: each answer it gives is found in the passages shown, and each source's sentence holds it."""
    index = open_corpus(ROOT / "corpora" / "sample" / "docs")
    questions = [json.loads(line)["question"] for line in (ROOT / "corpora" / "sample" / "questions.jsonl").open()]
    answered = 0
    for question in questions[:3]:
        settings = agent_settings("react", max_steps=4, seed=0)  # the answer profile's options, on react
        session = Session.from_settings(settings, backend=small_backend, index=index, corpus="sample")
        trajectory = attach_sources(session.ask(question, settings.config), index)
        if trajectory.stop_reason != "final" or trajectory.answer.strip().lower() in ("yes", "no"):
            continue
        answered += 1
        needle = " ".join(trajectory.answer.split()).lower()
        assert trajectory.sources, (question, trajectory.answer)
        for source in trajectory.sources:
            shown = " ".join(step.observation or "" for step in trajectory.steps).lower()
            assert source["title"].lower() in shown
            label = " ".join([source["title"], *source["heading"], source["sentence"]]).lower()
            assert needle in " ".join(label.split())
    assert answered
