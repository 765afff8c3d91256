"""The evaluation runner with the scripted backend: scores, run folder, resume, and failures mid-run."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from support import plain_settings

from offline_agent.agents import agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.errors import ModelError, OfflineAgentError
from offline_agent.eval.results import ResultsError, RunFolder
from offline_agent.eval.runner import EvalOptions, default_out, prepare_evaluation, run_evaluation, trajectory_of
from offline_agent.eval.scoring import summarize, support_recall, titles_seen

ROOT = Path(__file__).resolve().parents[1]


def approx(value: float):
    return pytest.approx(value, abs=1e-6)  # summaries round to six decimals


QUESTIONS = [
    {
        "id": "q1",
        "question": "Which river flows through the city where Marie Curie was born?",
        "answer": "Vistula",
        "supporting_titles": ["Marie Curie", "Warsaw"],
        "type": "bridge",
    },
    {
        "id": "q2",
        "question": "Who was born first, Marie Curie or Pierre Curie?",
        "answer": "Pierre Curie",
        "supporting_titles": ["Marie Curie", "Pierre Curie"],
        "type": "comparison",
    },
    {
        "id": "q3",
        "question": "Into which sea does the Vistula flow?",
        "answer": "the Baltic Sea",
        "supporting_titles": ["Vistula"],
        "type": "bridge",
    },
]

# Scripted model turns per question: q1 right after two searches, q2 wrong after one, q3 a format error.
SCRIPT = {
    "q1": [
        "Thought: Marie Curie first.\nAction: search[Marie Curie]",
        "Thought: Warsaw.\nAction: search[Warsaw river]",
        "Thought: The Vistula.\nFinal: Vistula",
    ],
    "q2": ["Thought: Both.\nAction: search[Pierre Curie born]", "Thought: Marie.\nFinal: Marie Curie"],
    "q3": ["I think it is the Baltic Sea."],
}


def outputs(*ids: str) -> list[str]:
    return [turn for qid in ids for turn in SCRIPT[qid]]


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in QUESTIONS), encoding="utf-8")
    return path


def options(questions: Path, pool: Path, out: Path, limit: int | None = None, **settings) -> EvalOptions:
    """EvalOptions over `pool` with react's plain settings, and `settings` (agent, run settings, options) on top."""
    return EvalOptions(dataset=questions, pool=pool, out=out, limit=limit, **plain_settings(**settings))


def test_a_whole_run(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    backend = ScriptedBackend(outputs("q1", "q2", "q3"))
    summary = run_evaluation(options(questions, tiny_corpus, out, grammar=False), backend=backend)
    rows = RunFolder(out).read_results()
    assert [row["id"] for row in rows] == ["q1", "q2", "q3"]
    q1, q2, q3 = rows
    assert (q1["prediction"], q1["em"], q1["f1"], q1["support_recall"]) == ("Vistula", 1.0, 1.0, 1.0)
    assert q1["seen_titles"][0] == "Marie Curie" and q1["steps"] == 3 and q1["actions"] == 2
    assert (q2["em"], q2["f1"], q2["support_recall"], q2["stop_reason"]) == (0.0, 0.5, 1.0, "final")
    assert q2["gold"] == "Pierre Curie" and q2["prediction"] == "Marie Curie"
    assert q3["format_error"] and q3["rejected_steps"] == 1 and q3["stop_reason"] == "error"
    assert q3["prediction"] is None and q3["support_recall"] == 0.0
    assert trajectory_of(q1).answer == "Vistula" and trajectory_of(q1).corpus.startswith("pool:")

    assert summary["questions"] == 3 and summary["answered"] == 2
    assert summary["em"] == approx(1 / 3) and summary["f1"] == approx(1.5 / 3)
    assert summary["support_recall"] == approx(2 / 3)
    fmt = summary["format"]
    assert (fmt["steps"], fmt["rejected_steps"], fmt["format_error_runs"]) == (6, 1, 1)
    assert fmt["rejected_step_rate"] == approx(1 / 6) and fmt["format_error_run_rate"] == approx(1 / 3)
    assert summary["stop_reasons"] == {
        "final": 2,
        "abstained": 0,
        "max_steps": 0,
        "timeout": 0,
        "error": 1,
        "out_of_scope": 0,
    }
    assert summary["steps_per_question"]["mean"] == approx(2.0)
    assert summary["tokens"]["prompt"] > 0 and summary["tokens"]["generated"] > 0
    assert summary["by_type"]["bridge"]["questions"] == 2 and summary["by_type"]["comparison"]["em"] == 0.0
    # searches: q1 two, q2 one, q3 none; of the answered bridge questions (q1 only) none after a single search
    assert [row["searches"] for row in rows] == [2, 1, 0] and summary["searches_per_question"] == approx(1.0)
    assert summary["by_type"]["bridge"]["searches"] == approx(1.0)
    # hops: q1's second search looks for Warsaw, read in its first Observation; q2 searches the question's own names
    assert [row["hops"] for row in rows] == [1, 0, 0] and summary["hops_per_question"] == approx(1 / 3)
    assert summary["by_type"]["bridge"]["hops"] == approx(0.5) and summary["by_type"]["comparison"]["hops"] == 0.0
    assert summary["by_type"]["bridge"]["one_search"] == 0.0 and summary["by_type"]["comparison"]["one_search"] == 1.0
    assert summary["by_level"] == {} and summary["run"]["pending"] == 0
    assert json.loads((out / "summary.json").read_text()) == summary

    config = json.loads((out / "config.json").read_text())
    assert config["agent"] == "react" and config["grammar"] == "off" and config["setting"] == "pooled"
    assert config["model"]["id"] == "scripted" and config["seed"] == 0 and config["version"]
    assert len(config["dataset"]["sha256"]) == len(config["corpus"]["sha256"]) == 64
    assert len(config["grammar_sha256"]) == len(config["prompt_sha256"]) == 64
    assert config["agent_config"]["max_steps"] == 8 and config["options"]["limit"] is None
    assert config["tools"] == ["search", "lookup", "calculator"]


def test_rerun_resumes_and_skips_finished_questions(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend(outputs("q1")))
    # the same command again: nothing to do, so the backend (with nothing queued) is never called
    again = prepare_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend())
    assert again.resumed and again.pending == []
    assert again.run()["questions"] == 1
    # a larger limit goes on from where the last run stopped
    backend = ScriptedBackend(outputs("q2", "q3"))
    summary = run_evaluation(options(questions, tiny_corpus, out), backend=backend)
    assert summary["questions"] == 3 and "Marie Curie or Pierre Curie" in backend.calls[0].prompt
    assert [row["id"] for row in RunFolder(out).read_results()] == ["q1", "q2", "q3"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"agent": "act"}, "agent: 'react' there, 'act' now"),
        ({"seed": 3}, "seed: 0 there, 3 now"),
        ({"grammar": False}, "grammar: 'on' there, 'off' now"),
        ({"max_steps": 4}, "agent_config.max_steps: 8 there"),
    ],
)
def test_another_config_is_refused(questions: Path, tiny_corpus: Path, tmp_path: Path, change, field) -> None:
    out = tmp_path / "run"
    run_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend(outputs("q1")))
    with pytest.raises(ResultsError) as caught:
        prepare_evaluation(options(questions, tiny_corpus, out, **change), backend=ScriptedBackend())
    message = str(caught.value)
    assert "another configuration" in message and field in message and "use another --out" in message


def test_a_changed_dataset_is_refused(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend(outputs("q1")))
    questions.write_text(questions.read_text() + json.dumps({"id": "q4", "question": "q", "answer": "a"}) + "\n")
    with pytest.raises(ResultsError, match="dataset.sha256"):
        prepare_evaluation(options(questions, tiny_corpus, out), backend=ScriptedBackend())


def test_a_torn_last_line_is_cut_off_and_redone(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_evaluation(options(questions, tiny_corpus, out, limit=2), backend=ScriptedBackend(outputs("q1", "q2")))
    results = out / "results.jsonl"
    whole = results.read_bytes()
    lines = whole.splitlines(keepends=True)
    results.write_bytes(lines[0] + lines[1][:40])  # a crash in the middle of the second line
    folder = RunFolder(out)
    assert [row["id"] for row in folder.read_results()] == ["q1"] and folder.torn_bytes == 40
    assert results.read_bytes() == lines[0] + lines[1][:40]  # reading alone never changes the file
    messages: list[str] = []
    run = prepare_evaluation(
        options(questions, tiny_corpus, out, limit=2), backend=ScriptedBackend(outputs("q2")), status=messages.append
    )
    assert any("cut off a torn last line (40 bytes)" in m for m in messages)
    assert [record.id for record in run.pending] == ["q2"]
    run.run()
    redone = json.loads(results.read_bytes().splitlines()[1])
    assert (redone["id"], redone["prediction"]) == ("q2", json.loads(lines[1])["prediction"])


@pytest.mark.parametrize("tail", [b'{"id": "q2", "em": 1', b'{"id": "q2"}', b"\x00\x00\x00\n"])
def test_torn_tails(tmp_path: Path, tail: bytes) -> None:
    folder = RunFolder(tmp_path)
    good = b'{"id": "q1"}\n'
    folder.results_path.write_bytes(good + tail)
    assert folder.read_results(repair=True) == [{"id": "q1"}]
    assert folder.results_path.read_bytes() == good


def test_a_broken_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.results_path.write_bytes(b'{"id": "q1"}\nnot json\n{"id": "q3"}\n')
    with pytest.raises(ResultsError, match="line 2 is not a result line"):
        folder.read_results(repair=True)


def test_a_model_failing_mid_run_keeps_what_was_written(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    backend = ScriptedBackend([*outputs("q1"), SCRIPT["q2"][0]])  # runs dry in the middle of q2
    with pytest.raises(ModelError) as caught:
        run_evaluation(options(questions, tiny_corpus, out), backend=backend)
    message = str(caught.value)
    assert "stopped after 1 of 3 questions" in message and "rerun the same command to resume" in message
    assert [row["id"] for row in RunFolder(out).read_results()] == ["q1"]
    assert json.loads((out / "summary.json").read_text())["questions"] == 1
    summary = run_evaluation(options(questions, tiny_corpus, out), backend=ScriptedBackend(outputs("q2", "q3")))
    assert summary["questions"] == 3


def test_a_full_disk_leaves_whole_lines(questions: Path, tiny_corpus: Path, tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "run"
    run = prepare_evaluation(options(questions, tiny_corpus, out), backend=ScriptedBackend(outputs("q1", "q2")))
    real_write = os.write
    calls = {"n": 0}

    def write(fd: int, data) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, data)  # q1's line
        if calls["n"] == 2:
            return real_write(fd, bytes(data[:25]))  # half of q2's line, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(ResultsError) as caught:
        run.run()
    monkeypatch.undo()
    message = str(caught.value)
    assert "No space left on device" in message and "the file is intact" in message and "\n" not in message
    text = (out / "results.jsonl").read_text()
    assert text.endswith("\n") and [json.loads(line)["id"] for line in text.splitlines()] == ["q1"]


def test_one_run_at_a_time_per_folder(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = prepare_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend(outputs("q1")))
    with pytest.raises(ResultsError, match="another `offline-agent eval` is writing to"):
        prepare_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend())
    first.run()
    assert prepare_evaluation(options(questions, tiny_corpus, out, limit=1), backend=ScriptedBackend()).resumed


def test_distractor_setting_searches_each_questions_context(tmp_path: Path) -> None:
    from test_eval_datasets import write_hotpot

    dataset = write_hotpot(tmp_path / "hotpot.json")
    backend = ScriptedBackend(
        [
            "Thought: x\nAction: search[Edda Morlin]",
            "Thought: x\nAction: search[Selma Tunnel Kessa]",
            "Thought: x\nFinal: Lunne",
            "Thought: x\nFinal: Selma Tunnel",
        ]
    )
    summary = run_evaluation(EvalOptions(dataset=dataset, out=tmp_path / "run", **plain_settings()), backend=backend)
    rows = RunFolder(tmp_path / "run").read_results()
    # q1 searched for the Selma Tunnel, which only q2's context holds: it found its own paragraphs only
    assert rows[0]["seen_titles"] == ["Edda Morlin", "Kessa"]
    assert rows[0]["support_recall"] == 1.0 and rows[1]["support_recall"] == 0.0
    assert (rows[0]["type"], rows[0]["level"]) == ("bridge", "easy")
    assert summary["em"] == 1.0 and set(summary["by_level"]) == {"easy", "medium"}
    assert json.loads((tmp_path / "run" / "config.json").read_text())["setting"] == "distractor"


def test_strategies_without_tools_have_no_support_recall(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    backend = ScriptedBackend(["Final: Vistula", "Final: Marie Curie", "Final: Baltic Sea"])
    summary = run_evaluation(options(questions, tiny_corpus, tmp_path / "run", agent="standard"), backend=backend)
    assert summary["em"] == approx(2 / 3) and summary["support_recall"] is None
    assert summary["steps_per_question"]["max"] == 1


def test_bad_options_fail_before_the_model_loads(questions: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(OfflineAgentError, match="unknown agent 'nope'"):
        agent_settings("nope")
    for bad, message in [
        ({"limit": 0}, "--limit must be at least 1"),
        ({"pool": tmp_path / "missing"}, "corpus not found"),
    ]:
        with pytest.raises(OfflineAgentError, match=message):
            prepare_evaluation(
                EvalOptions(**{"dataset": questions, "pool": tiny_corpus, "out": tmp_path / "run", **bad})
            )
    assert not (tmp_path / "run").exists()


def test_sample_questions_default_to_the_sample_corpus(tmp_path: Path) -> None:
    sample = ROOT / "corpora" / "sample" / "questions.jsonl"
    run = prepare_evaluation(EvalOptions(sample, out=tmp_path / "run", limit=1), backend=ScriptedBackend())
    assert run.corpus.setting == "pooled" and run.corpus.passages == 224
    assert run.config["corpus"]["pool"].endswith("docs")
    run.folder.unlock()
    with pytest.raises(OfflineAgentError, match="needs each question's context"):
        prepare_evaluation(EvalOptions(sample, setting="distractor", out=tmp_path / "r2"), backend=ScriptedBackend())


def test_default_out_names_the_run(questions: Path) -> None:
    settings = agent_settings("cot", grammar=False, seed=2)
    opts = EvalOptions(dataset=questions, model="/models/tiny.gguf", settings=settings)
    assert default_out(opts, "pooled") == Path("runs/questions-pooled-cot-tiny-nogrammar-seed2")


def test_support_recall_and_titles() -> None:
    steps = [{"details": {"titles": ["A", "B"]}}, {"details": None}, {"details": {"titles": ["B", "C"]}}]
    assert titles_seen(steps) == ["A", "B", "C"]
    assert support_recall(["A", "D"], ["A", "B"]) == 0.5 and support_recall([], ["A"]) is None


def test_grammar_rejections_and_prevented_moves_are_counted() -> None:
    from offline_agent.details import KnowAgentDetails, StepDetails, ToolDetails
    from offline_agent.eval.datasets import QARecord
    from offline_agent.eval.scoring import result_row
    from offline_agent.steps import StepRecord, Trajectory

    steps = [
        StepRecord(index=0, raw="", details=KnowAgentDetails(rejections=[(8, "search"), (30, "x")], prevented=1)),
        StepRecord(index=1, raw="", details=StepDetails(tool=ToolDetails(titles=["A"]))),
        StepRecord(index=2, raw="", details=None),
    ]
    trajectory = Trajectory(question="q", steps=steps, answer="a", stop_reason="final")
    row = result_row(QARecord(id="1", question="q", answer="a"), trajectory)
    assert row["grammar_rejections"] == 2 and row["prevented_moves"] == 1
    summary = summarize([row, {**row, "prevented_moves": 2}])
    assert summary["format"]["prevented_moves"] == 3 and summary["format"]["grammar_rejections"] == 4


def test_summary_of_nothing() -> None:
    summary = summarize([])
    assert summary["questions"] == 0 and summary["em"] is None and summary["seconds_per_question"]["p90"] is None


def test_public_api_is_sorted_and_importable() -> None:
    import offline_agent.eval as evaluation

    assert evaluation.__all__ == sorted(evaluation.__all__)
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None, name


def test_searches_of_a_row_written_before_they_were_counted() -> None:
    from offline_agent.eval.scoring import answered_after_one_search, searches_of

    steps = [{"action": "search"}, {"action": "search", "tool_error": True}, {"action": "lookup"}, {"final": "x"}]
    old = {"prediction": "x", "trajectory": {"steps": steps}}
    assert searches_of(old) == 1 and answered_after_one_search([old]) == 1.0
    assert answered_after_one_search([{"prediction": None, "searches": 0}]) is None


def test_answers_that_all_come_back_at_once_are_each_written_in_order(tiny_corpus: Path, tmp_path: Path) -> None:
    """With questions in flight, every one is written even when several finish while the writer is busy (a slow
    terminal here); a loop that stopped once nothing was left to write lost the questions not yet started."""
    import dataclasses
    import time

    from offline_agent.eval.runner import EvalCallbacks

    path = tmp_path / "many.jsonl"
    ids = [f"m{i}" for i in range(12)]
    path.write_text("".join(json.dumps({"id": i, "question": "Where?", "answer": "x"}) + "\n" for i in ids))
    finals = ["Thought: Known.\nFinal: x"] * len(ids)
    run_evaluation(options(path, tiny_corpus, tmp_path / "one"), backend=ScriptedBackend(finals))
    answered = {row["id"]: row for row in RunFolder(tmp_path / "one").read_results()}

    run = prepare_evaluation(options(path, tiny_corpus, tmp_path / "three"), backend=ScriptedBackend())
    run.options = dataclasses.replace(run.options, concurrency=3)  # what a batching server's run would use
    run.answer = lambda record: answered[record.id]  # answers come back at once: the writer is the slow part
    slow = EvalCallbacks(on_question=lambda record: time.sleep(0.01), on_result=lambda row, rows: time.sleep(0.01))
    summary = run.run(slow)
    assert [row["id"] for row in RunFolder(tmp_path / "three").read_results()] == ids
    assert summary["run"]["pending"] == 0
