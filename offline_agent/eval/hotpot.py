"""HotpotQA's official conventions: the sentences we submit as supporting facts, the official supporting-fact
and joint metrics, and predictions.json in the official format.

predictions.json is `{"answer": {id: answer}, "sp": {id: [[title, sentence id], ...]}}`, what HotpotQA's
evaluation script reads; a question without an answer is submitted as "" (scored as a wrong answer, as the script
scores a missing one).

The supporting facts we submit (an agent writes no sentence ids, so they are derived from its trajectory): the
sentences, among those the agent saw in its Observations, of the paragraphs its answer rests on.
- The paragraphs: the top passage of every tool call that returned passages (the first title a search, retrieve
  or lookup recorded; the first call's for the planner), and every paragraph in which the agent saw a sentence
  holding its answer.
- The sentences of those paragraphs: the first one, each one holding the answer (its normalised words, in order:
  never for yes/no), and each one a lookup returned, when the agent saw it.
- Seen: the sentence's start (its first 50 characters, or all of it) appears in the Observation of a step that
  recorded the paragraph's title (searches show the first 600 characters of a passage, a lookup one sentence).
- Sentence ids come from the dataset: the question's own context paragraph of that title, else the first paragraph
  of that title in the dataset file; a passage whose title is in neither has no ids and is left out.
With the gold paragraphs given, this rule (first sentence plus answer sentences) scores sp F1 0.76 on the 200 dev
questions; what the agent actually opened decides the rest.

Metrics, as HotpotQA's evaluation defines them: sp precision, recall and F1 over the sets of (title, sentence id)
pairs, sp EM 1 when the sets are equal; joint precision and recall are the products of the answer's and the sp's,
joint F1 their harmonic mean, joint EM the product of both EMs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from offline_agent.eval.datasets import Dataset, QARecord
from offline_agent.eval.metrics import exact_match, f1_precision_recall, normalize_answer

SEEN_PREFIX = 50  # characters of a sentence's start that must appear in an Observation for it to count as seen
_NOT_AN_ANSWER = ("", "yes", "no", "noanswer")

Fact = tuple[str, int]


def sentence_table(dataset: Dataset) -> dict[str, tuple[str, ...]]:
    """Title -> sentences of the first paragraph with that title in the dataset (the fallback for pooled runs)."""
    table: dict[str, tuple[str, ...]] = {}
    for record in dataset.records:
        for paragraph in record.context:
            if paragraph.sentences:
                table.setdefault(paragraph.title, paragraph.sentences)
    return table


def _squash(text: str) -> str:
    return " ".join(text.split())


def _holds(sentence: str, answer_words: Sequence[str]) -> bool:
    words = normalize_answer(sentence).split()
    n = len(answer_words)
    return any(words[i : i + n] == list(answer_words) for i in range(len(words) - n + 1))


def _step_parts(step: Any) -> tuple[list[str], str, str | None]:
    if isinstance(step, dict):
        return list((step.get("details") or {}).get("titles") or ()), step.get("observation") or "", step.get("action")
    return list((step.details or {}).get("titles") or ()), step.observation or "", step.action


def predicted_facts(
    record: QARecord,
    steps: Iterable[Any],
    answer: str | None,
    sentences: Mapping[str, Sequence[str]] | None = None,
) -> list[Fact]:
    """The (title, sentence id) pairs we submit for `record` (the rule in the module docstring), in the order
    the paragraphs were first seen, sentence ids ascending. `steps`: StepRecords or their dicts."""
    own = {paragraph.title: paragraph.sentences for paragraph in record.context if paragraph.sentences}
    fallback = sentences or {}

    def sentences_of(title: str) -> list[str]:
        return [_squash(s) for s in (own.get(title) or fallback.get(title) or ())]

    answer_words = normalize_answer(answer or "").split()
    holds_answer = bool(answer_words) and " ".join(answer_words) not in _NOT_AN_ANSWER
    order: dict[str, None] = {}
    opened: set[str] = set()
    seen: dict[str, set[int]] = {}
    looked_up: dict[str, set[int]] = {}
    for step in steps:
        titles, observation, action = _step_parts(step)
        if not titles:
            continue
        opened.add(titles[0])
        text = _squash(observation)
        for title in dict.fromkeys(titles):
            order.setdefault(title, None)
            for number, sentence in enumerate(sentences_of(title)):
                if sentence and sentence[:SEEN_PREFIX] in text:
                    seen.setdefault(title, set()).add(number)
                    if action == "lookup":
                        looked_up.setdefault(title, set()).add(number)
    facts: list[Fact] = []
    for title in order:
        numbers = seen.get(title, set())
        texts = sentences_of(title)
        answering = {n for n in numbers if holds_answer and _holds(texts[n], answer_words)}
        if title not in opened and not answering:
            continue
        chosen = answering | looked_up.get(title, set()) | ({0} & numbers)
        facts += [(title, n) for n in sorted(chosen)]
    return facts


def sp_scores(predicted: Iterable[Sequence[Any]], gold: Iterable[Sequence[Any]]) -> dict[str, float]:
    """Supporting-fact EM, F1, precision and recall of one question (sets of (title, sentence id) pairs)."""
    mine = {(str(title), int(number)) for title, number in predicted}
    theirs = {(str(title), int(number)) for title, number in gold}
    hits = len(mine & theirs)
    wrong, missed = len(mine - theirs), len(theirs - mine)
    precision = hits / (hits + wrong) if hits + wrong else 0.0
    recall = hits / (hits + missed) if hits + missed else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"em": float(wrong + missed == 0), "f1": f1, "precision": precision, "recall": recall}


def joint_scores(answer: str | None, gold_answer: str, sp: Mapping[str, float]) -> dict[str, float]:
    """Joint EM and F1: the answer's and the supporting facts' precision and recall multiplied."""
    _, precision, recall = f1_precision_recall(answer, gold_answer)
    joint_precision, joint_recall = precision * sp["precision"], recall * sp["recall"]
    total = joint_precision + joint_recall
    return {
        "em": exact_match(answer, gold_answer) * sp["em"],
        "f1": 2 * joint_precision * joint_recall / total if total else 0.0,
    }


def fact_fields(
    record: QARecord,
    steps: Iterable[Any],
    answer: str | None,
    sentences: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The supporting-fact part of a result row: gold and predicted facts, sp and joint scores (None without
    gold facts)."""
    predicted = predicted_facts(record, steps, answer, sentences)
    fields: dict[str, Any] = {
        "sp": [[title, number] for title, number in predicted],
        "supporting_facts": [[title, number] for title, number in record.supporting_facts] or None,
        "sp_em": None,
        "sp_f1": None,
        "sp_precision": None,
        "sp_recall": None,
        "joint_em": None,
        "joint_f1": None,
    }
    if record.supporting_facts:
        sp = sp_scores(predicted, record.supporting_facts)
        joint = joint_scores(answer, record.answer, sp)
        fields.update(
            sp_em=sp["em"],
            sp_f1=round(sp["f1"], 6),
            sp_precision=round(sp["precision"], 6),
            sp_recall=round(sp["recall"], 6),
            joint_em=joint["em"],
            joint_f1=round(joint["f1"], 6),
        )
    return fields


def predictions(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """predictions.json of a run: every question's answer ("" for none) and submitted facts, by id."""
    answers: dict[str, str] = {}
    facts: dict[str, list[list[Any]]] = {}
    for row in rows:
        key = str(row["id"])
        answers[key] = row.get("prediction") or ""
        facts[key] = [list(fact) for fact in row.get("sp") or ()]
    return {"answer": answers, "sp": facts}


def with_fact_fields(
    row: dict[str, Any], record: QARecord | None, sentences: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """`row` with the supporting-fact fields added from its trajectory, when it was written before they existed
    (the row itself is returned when it has them, or when its record is gone from the dataset)."""
    if "sp" in row or record is None:
        return row
    trajectory = row.get("trajectory") or {}
    return {**row, **fact_fields(record, trajectory.get("steps") or (), row.get("prediction"), sentences)}
