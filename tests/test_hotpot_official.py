"""HotpotQA's official conventions: predictions.json in the official format, the supporting sentences we submit,
and sp/joint scores that agree with a reference implementation of the official evaluation written here.

The reference (`official_eval`) lives only in this file and is written from the evaluation's definitions (answer
normalisation, token F1 with the yes/no/noanswer rule, sets of (title, sentence id) pairs, joint precision and
recall as products), independently of offline_agent.eval: it reads predictions.json and the gold file only.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path

import pytest
from support import SHARED_DATA, needs_shared_data, plain_settings
from test_eval_datasets import HOTPOT, write_hotpot

from offline_agent.agents import agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.details import StepDetails, ToolDetails
from offline_agent.eval.datasets import Paragraph, QARecord
from offline_agent.eval.hotpot import joint_scores, predicted_facts, sp_scores
from offline_agent.eval.results import RunFolder
from offline_agent.eval.runner import EvalOptions, run_evaluation
from offline_agent.steps import StepRecord


# ---- the reference: HotpotQA's official evaluation, from its definitions ----------------------------------------
def _normal(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _answer_scores(prediction: str, gold: str) -> tuple[float, float, float, float]:
    """(em, f1, precision, recall) of one answer."""
    mine, theirs = _normal(prediction), _normal(gold)
    em = float(mine == theirs)
    special = {"yes", "no", "noanswer"}
    if (mine in special or theirs in special) and mine != theirs:
        return em, 0.0, 0.0, 0.0
    common = Counter(mine.split()) & Counter(theirs.split())
    same = sum(common.values())
    if not same:
        return em, 0.0, 0.0, 0.0
    precision, recall = same / len(mine.split()), same / len(theirs.split())
    return em, 2 * precision * recall / (precision + recall), precision, recall


def _sp(prediction: list, gold: list) -> tuple[float, float, float, float]:
    mine, theirs = {tuple(p) for p in prediction}, {tuple(g) for g in gold}
    tp, fp, fn = len(mine & theirs), len(mine - theirs), len(theirs - mine)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(fp + fn == 0), f1, precision, recall


def official_eval(predictions: dict, gold: list[dict]) -> dict[str, float]:
    """Mean em, f1, sp_em, sp_f1, joint_em, joint_f1 over the gold questions (a missing one scores 0)."""
    totals = Counter()
    for record in gold:
        key = record["_id"]
        if key not in predictions["answer"] or key not in predictions["sp"]:
            continue
        em, f1, precision, recall = _answer_scores(predictions["answer"][key], record["answer"])
        sp_em, sp_f1, sp_precision, sp_recall = _sp(predictions["sp"][key], record["supporting_facts"])
        joint_precision, joint_recall = precision * sp_precision, recall * sp_recall
        joint_f1 = (
            2 * joint_precision * joint_recall / (joint_precision + joint_recall)
            if joint_precision + joint_recall > 0
            else 0.0
        )
        totals.update(em=em, f1=f1, sp_em=sp_em, sp_f1=sp_f1, joint_em=em * sp_em, joint_f1=joint_f1)
    return {name: totals[name] / len(gold) for name in ("em", "f1", "sp_em", "sp_f1", "joint_em", "joint_f1")}


def assert_summary_agrees(folder: Path, gold: list[dict]) -> dict[str, float]:
    predictions = json.loads((folder / "predictions.json").read_text(encoding="utf-8"))
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    reference = official_eval(predictions, gold)
    for name, value in reference.items():
        assert summary[name] == pytest.approx(value, abs=1e-5), name
    return reference


# ---- the rule for the sentences we submit ----------------------------------------------------------------------
RECORD = QARecord(
    id="h1",
    question="Which river runs through the town where Edda Morlin was born?",
    answer="Lunne",
    context=(
        Paragraph("Edda Morlin", "", ("Edda Morlin was a painter born in Kessa.", " She painted storms.")),
        Paragraph("Kessa", "", ("Kessa is a fishing village.", " The Lunne river runs through Kessa.")),
        Paragraph("Orvik Bridge", "", ("The Orvik Bridge crosses the Lunne.",)),
    ),
    supporting_facts=(("Edda Morlin", 0), ("Kessa", 1), ("Kessa", 0)),
)


def search(index: int, titles: list[str], observation: str) -> StepRecord:
    return StepRecord(
        index,
        "",
        action="search",
        argument="x",
        observation=observation,
        details=StepDetails(tool=ToolDetails(titles=titles)),
    )


def test_submitted_sentences_are_seen_ones_of_the_paragraphs_the_answer_rests_on() -> None:
    steps = [
        search(
            0,
            ["Edda Morlin", "Orvik Bridge"],
            "[1] Edda Morlin: Edda Morlin was a painter born in Kessa. She "
            "painted storms.\n[2] Orvik Bridge: The Orvik Bridge crosses the Lunne.",
        ),
        search(1, ["Kessa"], "[1] Kessa: Kessa is a fishing village. The Lunne river runs through Kessa."),
    ]
    facts = predicted_facts(RECORD, steps, "Lunne")
    # Edda Morlin and Kessa were top hits: their first sentences; the answer is in Kessa 1 and Orvik Bridge 0
    assert facts == [("Edda Morlin", 0), ("Orvik Bridge", 0), ("Kessa", 0), ("Kessa", 1)]
    # a yes/no answer holds no sentence: the top hits' first sentences only
    assert predicted_facts(RECORD, steps, "yes") == [("Edda Morlin", 0), ("Kessa", 0)]
    # no answer at all, and no steps at all
    assert predicted_facts(RECORD, steps, None) == [("Edda Morlin", 0), ("Kessa", 0)]
    assert predicted_facts(RECORD, [], "Lunne") == []


def test_unseen_sentences_and_unknown_titles_are_not_submitted() -> None:
    # the Observation was cut before Kessa's second sentence; "Elsewhere" is in no context of the dataset
    steps = [search(0, ["Kessa", "Elsewhere"], "[1] Kessa: Kessa is a fishing village. The Lu ...\n[2] Elsewhere: x")]
    assert predicted_facts(RECORD, steps, "Lunne") == [("Kessa", 0)]
    # a title from outside the question's context gets its ids from the dataset-wide table
    table = {"Elsewhere": ("Lunne is far from here.",)}
    steps = [search(0, ["Elsewhere"], "[1] Elsewhere: Lunne is far from here.")]
    assert predicted_facts(RECORD, steps, "Lunne", table) == [("Elsewhere", 0)]


def test_a_lookup_sentence_is_submitted() -> None:
    steps = [
        search(0, ["Edda Morlin"], "[1] Edda Morlin: Edda Morlin was a painter born in Kessa. She painted storms."),
        StepRecord(
            1,
            "",
            action="lookup",
            argument="storms",
            observation="(Result 1 / 1) She painted storms.",
            details=StepDetails(tool=ToolDetails(titles=["Edda Morlin"])),
        ),
    ]
    assert predicted_facts(RECORD, steps, "Kessa") == [("Edda Morlin", 0), ("Edda Morlin", 1)]


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ([], [("A", 0)], {"em": 0.0, "f1": 0.0, "precision": 0.0, "recall": 0.0}),
        ([("A", 0)], [("A", 0)], {"em": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0}),
        ([("A", 0), ("B", 1)], [("A", 0), ("C", 0)], {"em": 0.0, "f1": 0.5, "precision": 0.5, "recall": 0.5}),
        ([["A", 0], ["A", 0]], [["A", 0], ["B", 2]], {"em": 0.0, "f1": 2 / 3, "precision": 1.0, "recall": 0.5}),
    ],
)
def test_sp_scores(predicted, gold, expected) -> None:
    assert sp_scores(predicted, gold) == pytest.approx(expected)
    assert _sp(predicted, gold) == pytest.approx(
        (expected["em"], expected["f1"], expected["precision"], expected["recall"])
    )


def test_joint_scores_multiply_precision_and_recall() -> None:
    sp = sp_scores([("A", 0), ("B", 1)], [("A", 0), ("C", 0)])  # p = r = 0.5
    joint = joint_scores("the Lunne river", "Lunne", sp)  # answer p = 1/2, r = 1
    assert joint == pytest.approx({"em": 0.0, "f1": 2 * 0.25 * 0.5 / 0.75})
    assert joint_scores("yes", "no", sp_scores([("A", 0)], [("A", 0)])) == {"em": 0.0, "f1": 0.0}


# ---- predictions.json of a run folder --------------------------------------------------------------------------
SCRIPT = [
    "Thought: x\nAction: search[Edda Morlin born]",
    "Thought: x\nAction: search[Kessa river]",
    "Thought: x\nFinal: Lunne",
    "Thought: x\nAction: search[Selma Tunnel opened]",
    "Thought: x\nFinal: Orvik Bridge",
]


def test_predictions_json_is_written_after_each_result_and_on_resume(tmp_path: Path) -> None:
    dataset = write_hotpot(tmp_path / "hotpot.json")
    out = tmp_path / "run"
    run_evaluation(
        EvalOptions(dataset=dataset, out=out, limit=1, **plain_settings()), backend=ScriptedBackend(SCRIPT[:3])
    )
    first = json.loads((out / "predictions.json").read_text())
    assert first["answer"] == {"h1": "Lunne"} and set(first["sp"]) == {"h1"}
    assert ["Kessa", 1] in first["sp"]["h1"] and ["Edda Morlin", 0] in first["sp"]["h1"]
    summary = run_evaluation(
        EvalOptions(dataset=dataset, out=out, **plain_settings()), backend=ScriptedBackend(SCRIPT[3:])
    )
    predictions = json.loads((out / "predictions.json").read_text())
    assert predictions["answer"] == {"h1": "Lunne", "h2": "Orvik Bridge"}
    assert predictions["sp"]["h1"] == first["sp"]["h1"] and predictions["sp"]["h2"] == [["Selma Tunnel", 0]]
    assert summary["sp_questions"] == 2 and not list(out.glob(".*.tmp"))
    reference = assert_summary_agrees(out, HOTPOT)
    assert reference["em"] == 0.5 and 0 < reference["sp_f1"] < 1
    rows = RunFolder(out).read_results()
    assert rows[0]["supporting_facts"] == [["Edda Morlin", 0], ["Kessa", 1], ["Kessa", 0]]
    assert rows[1]["sp_em"] == 0.0 and rows[1]["joint_em"] == 0.0


def test_a_row_from_before_supporting_facts_gets_them_on_resume(tmp_path: Path) -> None:
    dataset = write_hotpot(tmp_path / "hotpot.json")
    out = tmp_path / "run"
    run_evaluation(
        EvalOptions(dataset=dataset, out=out, limit=1, **plain_settings()), backend=ScriptedBackend(SCRIPT[:3])
    )
    results = out / "results.jsonl"
    old = json.loads(results.read_text())
    for name in ("sp", "supporting_facts", "sp_em", "sp_f1", "sp_precision", "sp_recall", "joint_em", "joint_f1"):
        del old[name]
    results.write_text(json.dumps(old) + "\n")
    (out / "predictions.json").unlink()
    summary = run_evaluation(
        EvalOptions(dataset=dataset, out=out, **plain_settings()), backend=ScriptedBackend(SCRIPT[3:])
    )
    predictions = json.loads((out / "predictions.json").read_text())
    assert ["Kessa", 1] in predictions["sp"]["h1"] and summary["sp_questions"] == 2
    assert "sp" not in json.loads(results.read_text().splitlines()[0])  # results.jsonl is only ever appended to


def test_a_dataset_without_sentences_has_no_sp_scores(tmp_path: Path, tiny_corpus: Path) -> None:
    from test_eval_runner import QUESTIONS, options, outputs

    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in QUESTIONS), encoding="utf-8")
    summary = run_evaluation(
        # the plain engine the script is written for (verify's compare check would refuse q2's wrong answer)
        options(questions, tiny_corpus, tmp_path / "run"),
        backend=ScriptedBackend(outputs("q1", "q2", "q3")),
    )
    assert summary["sp_em"] is None and summary["joint_f1"] is None and summary["sp_questions"] == 0
    predictions = json.loads((tmp_path / "run" / "predictions.json").read_text())
    assert predictions["answer"] == {"q1": "Vistula", "q2": "Marie Curie", "q3": ""}
    assert predictions["sp"] == {"q1": [], "q2": [], "q3": []}


# ---- a real run on the HotpotQA dev file, scored by the reference --------------------------------------------------
@pytest.mark.model
@pytest.mark.shared_data
def test_shared_data_real_run_scores_agree_with_the_official_definitions(small_backend, tmp_path: Path) -> None:
    path = needs_shared_data(SHARED_DATA / "hotpotqa" / "hotpot_dev200_distractor.json")
    out = tmp_path / "run"
    run_evaluation(
        EvalOptions(dataset=path, out=out, limit=3, settings=agent_settings(max_steps=3)), backend=small_backend
    )
    gold = json.loads(path.read_text(encoding="utf-8"))[:3]
    reference = assert_summary_agrees(out, gold)
    predictions = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    assert set(predictions["answer"]) == {record["_id"] for record in gold}
    titles = {record["_id"]: {title for title, _ in record["context"]} for record in gold}
    for key, facts in predictions["sp"].items():  # distractor: every submitted fact is a sentence of the context
        context = dict(next(record["context"] for record in gold if record["_id"] == key))
        assert all(title in titles[key] and 0 <= number < len(context[title]) for title, number in facts)
    print("official-definition scores of a real 3-question run:", json.dumps(reference))
