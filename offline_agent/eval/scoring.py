"""From trajectories to numbers: the result row of one question, and the summary over a run's rows.

A result row (one line of results.jsonl) holds the question, the gold and predicted answers, their EM and F1,
support recall, the format and cost counts of the run, and the whole trajectory, so every figure of a summary
can be recomputed from results.jsonl alone (the report does exactly that).

Definitions:
- supporting facts (sp) and joint EM/F1: HotpotQA's official definitions, over the sentences of `hotpot.py`'s
  rule; None for a record whose dataset has no sentence-level supporting facts;
- support recall: the share of the record's supporting titles among the titles of the passages the agent's
  searches and lookups returned; None for a record without supporting titles or an agent without tools;
- a rejected step: a step whose text the Lark parser rejected (also when a retry with more tokens then parsed);
- a format-error run: a run that stopped because a step was rejected (stop reason `error` with a parse error);
- an invalid action: a parsed Action the tool refused (a tool error, a repeated call, lookup before search);
- a grammar rejection: a token the model ranked first that the grammar refused (decoding took the best allowed one);
- a prevented move: a grammar rejection where the next action was chosen, i.e. a move the agent's action graph
  forbids (KnowAgent records them per step, KnowAgentDetails.prevented).

A count that needs a capability the backend lacks is None in the row and n/a in summaries and reports, never 0:
cached tokens without a prefix cache that reports reuse (`reuses_prefix_cache`), grammar rejections and prevented
moves without `reports_rejections`. A total over rows is None when no row has the count.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from offline_agent.eval.datasets import QARecord
from offline_agent.eval.hotpot import fact_fields
from offline_agent.eval.metrics import exact_match, f1_score
from offline_agent.hops import SEARCH_TOOLS, hops, saved_hops
from offline_agent.steps import STOP_REASONS, Trajectory


def titles_seen(steps: Iterable[Any]) -> list[str]:
    """Titles of the passages a trajectory's searches and lookups returned, in first-seen order."""
    seen: dict[str, None] = {}
    for step in steps:
        if isinstance(step, dict):  # a step of a results.jsonl row, in its JSON form
            titles = (step.get("details") or {}).get("titles") or ()
        else:
            titles = step.details.seen_titles if step.details is not None else ()
        for title in titles:
            seen.setdefault(str(title), None)
    return list(seen)


def support_recall(supporting: Sequence[str], seen: Sequence[str]) -> float | None:
    """Share of `supporting` titles found in `seen` (None when there are none to find)."""
    if not supporting:
        return None
    found = set(seen)
    return sum(title in found for title in supporting) / len(supporting)


def result_row(
    record: QARecord,
    trajectory: Trajectory,
    *,
    uses_tools: bool = True,
    sentences: Mapping[str, Sequence[str]] | None = None,
    capabilities: Any = None,
) -> dict[str, Any]:
    """The results.jsonl line of one question: scores, counts, and the whole trajectory.

    `sentences` (title -> sentences, `hotpot.sentence_table`) gives sentence ids to passages from outside the
    question's own context (the pooled setting); `capabilities` (the backend's BackendCapabilities) decides which
    counts are None (n/a) rather than 0."""
    caches = capabilities is None or capabilities.reuses_prefix_cache
    rejects = capabilities is None or capabilities.reports_rejections
    steps = trajectory.steps
    seen = titles_seen(steps)
    usage = trajectory.usage
    rejected = sum(step.parse_error is not None for step in steps)
    format_error = trajectory.stop_reason == "error" and bool(steps) and steps[-1].parse_error is not None
    if record.answerable:
        em = max(exact_match(trajectory.answer, gold) for gold in record.answers or (record.answer,))
        f1 = round(max(f1_score(trajectory.answer, gold) for gold in record.answers or (record.answer,)), 6)
    else:  # the gold is no answer: an abstention matches it exactly, anything else not at all
        em = f1 = 1.0 if trajectory.abstained else 0.0
    return {
        "id": record.id,
        "question": record.question,
        "gold": record.answer if record.answerable else None,
        "prediction": trajectory.answer,
        "answerable": record.answerable,
        "abstained": trajectory.abstained,
        "outcome": outcome(record.answerable, trajectory.answer, trajectory.abstained, em),
        "em": em,
        "f1": f1,
        "support_recall": support_recall(record.supporting_titles, seen) if uses_tools else None,
        "supporting_titles": list(record.supporting_titles),
        "seen_titles": seen,
        **fact_fields(record, steps, trajectory.answer, sentences),
        "type": record.type,
        "level": record.level,
        "steps": len(steps),
        "actions": sum(step.action is not None for step in steps),
        "searches": sum(step.action in SEARCH_TOOLS and not step.tool_error for step in steps),
        "hops": len(hops(record.question, steps)),
        "rejected_steps": rejected,
        "format_error": format_error,
        "invalid_actions": sum(step.action is not None and step.tool_error for step in steps),
        "grammar_rejections": sum(len(step.details.rejections) for step in steps if step.details is not None)
        if rejects
        else None,
        "prevented_moves": sum(step.details.prevented_moves for step in steps if step.details is not None)
        if rejects
        else None,
        **answer_check_fields(steps),
        "stop_reason": trajectory.stop_reason,
        "prompt_tokens": usage.prompt_tokens,
        "cached_tokens": usage.cached_tokens if caches else None,
        "generated_tokens": usage.generated_tokens,
        "seconds": trajectory.seconds,
        "sources": trajectory.sources,  # the passages the answer rests on (sources.py); None where not looked for
        "trajectory": trajectory.to_dict(),
    }


OUTCOMES = ("right", "abstained", "wrong", "none")


def outcome(answerable: bool, answer: str | None, abstained: bool, em: float) -> str:
    """How CRAG scores one question: `right` (+1: an answer of an answerable question that matches a gold variant
    exactly, EM 1, as the report's right and wrong always were),
    `abstained` (0: the documents do not say), `wrong` (-1: any other answer, and every answer to a question the
    documents cannot answer), `none` (0: stopped without an answer, by max steps, time or an error)."""
    if abstained:
        return "abstained"
    if answer is None:
        return "none"
    return "right" if answerable and em >= 1.0 else "wrong"


def row_outcome(row: Mapping[str, Any]) -> str:
    """The outcome of a result row; rows written before outcomes existed are answerable questions."""
    if row.get("outcome") in OUTCOMES:
        return str(row["outcome"])
    return outcome(True, row.get("prediction"), bool(row.get("abstained")), float(row.get("em") or 0.0))


def abstention_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Outcomes of answerable and unanswerable questions apart (questions, right, abstained, wrong, none), the
    share of each kind abstained on, and the CRAG-style score: (right - wrong) / questions, over all."""
    parts: dict[str, dict[str, Any]] = {}
    for kind, answerable in (("answerable", True), ("unanswerable", False)):
        group = [row for row in rows if bool(row.get("answerable", True)) is answerable]
        counts = Counter(row_outcome(row) for row in group)
        parts[kind] = {"questions": len(group), **{name: counts.get(name, 0) for name in OUTCOMES}}
        parts[kind]["abstained_rate"] = _rate(counts.get("abstained", 0), len(group))
    right = parts["answerable"]["right"] + parts["unanswerable"]["right"]
    wrong = parts["answerable"]["wrong"] + parts["unanswerable"]["wrong"]
    return {**parts, "crag_score": _rate(right - wrong, len(rows))}


def searches_of(row: Mapping[str, Any]) -> int:
    """The searches (search or retrieve calls that ran) of a result row's run; rows written before the field are
    counted from their trajectory."""
    if row.get("searches") is not None:
        return int(row["searches"])
    steps = (row.get("trajectory") or {}).get("steps") or ()
    return sum(step.get("action") in SEARCH_TOOLS and not step.get("tool_error") for step in steps)


def hops_of(row: Mapping[str, Any]) -> int:
    """The hops (searches for a name read earlier, hops.py) of a result row's run; rows written before the field
    are counted from their trajectory."""
    if row.get("hops") is not None:
        return int(row["hops"])
    steps = (row.get("trajectory") or {}).get("steps") or ()
    return len(saved_hops(str(row.get("question") or ""), steps))


def answered_after_one_search(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of the answered questions among `rows` whose run made at most one search before its answer (None
    where none was answered): a bridge question answered so never read a second page on purpose."""
    answered = [row for row in rows if row.get("prediction") is not None]
    return _rate(sum(searches_of(row) <= 1 for row in answered), len(answered))


def answer_check_fields(steps: Sequence[Any]) -> dict[str, Any]:
    """What grounding and the answer checks did in one run: Finals refused by reason (agents/verify.py), how often
    a grounded grammar refused the model's first choice inside a Final, and each grounded step's grammar cost:
    building its text here and compiling it in the backend (seconds)."""
    details = [step.details for step in steps if step.details is not None]
    refused = Counter(d.refusal.reason for d in details if d.refusal is not None)
    grounded = [step for step in steps if step.details is not None and step.details.grounding is not None]
    return {
        "refused_finals": dict(sorted(refused.items())),
        "grounding_refusals": sum(s.details.grounding.refused or 0 for s in grounded) if grounded else None,
        "grounding_build_s": [s.details.grounding.build_s for s in grounded],
        "grounding_compile_s": [round(s.timings.compile_s, 4) for s in grounded],
    }


def _answer_checks(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run's totals of answer_check_fields (rows written before these fields count as none)."""
    refused: Counter[str] = Counter()
    for row in rows:
        refused.update(row.get("refused_finals") or {})
    grounded = [row for row in rows if row.get("grounding_refusals") is not None]
    builds = [1000 * b for row in rows for b in row.get("grounding_build_s") or ()]
    compiles = [1000 * c for row in rows for c in row.get("grounding_compile_s") or ()]
    return {
        "refused_finals": dict(sorted(refused.items())),
        "questions_with_refused_finals": sum(bool(row.get("refused_finals")) for row in rows),
        "grounding_refusals": sum(row["grounding_refusals"] for row in grounded) if grounded else None,
        "questions_with_grounding_refusals": sum(bool(row["grounding_refusals"]) for row in grounded),
        "grounded_steps": len(builds),
        "grammar_build_ms": {
            "median": _percentile(builds, 50),
            "p90": _percentile(builds, 90),
            "max": round(max(builds), 3) if builds else None,
        },
        "grammar_compile_ms": {
            "median": _percentile(compiles, 50),
            "p90": _percentile(compiles, 90),
            "max": round(max(compiles), 3) if compiles else None,
        },
    }


def _total(rows: Sequence[dict[str, Any]], key: str) -> int | None:
    """The sum of `key` over the rows that have it (None when none does: the backend could not count it)."""
    values = [row.get(key) for row in rows]
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _rate(part: int | None, whole: int | None) -> float | None:
    return round(part / whole, 6) if whole and part is not None else None


def _percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def running_scores(rows: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """EM, F1 and format-error run rate so far (what the progress bar shows)."""
    return {
        "em": _mean([row["em"] for row in rows]),
        "f1": _mean([row["f1"] for row in rows]),
        "format_error_rate": _rate(sum(bool(row["format_error"]) for row in rows), len(rows)),
    }


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every metric of a run, from its result rows (fractions in 0..1, tokens as totals and per question)."""
    n = len(rows)
    steps = [row["steps"] for row in rows]
    seconds = [float(row["seconds"]) for row in rows]
    recalls = [row["support_recall"] for row in rows if row.get("support_recall") is not None]
    facts = [row for row in rows if row.get("sp_em") is not None]  # rows of a dataset with supporting facts
    total_steps = sum(steps)
    actions = sum(row.get("actions", 0) for row in rows)
    stops = Counter(row["stop_reason"] for row in rows)
    tokens = {kind: _total(rows, f"{kind}_tokens") for kind in ("prompt", "cached", "generated")}
    return {
        "questions": n,
        "answered": sum(row["prediction"] is not None for row in rows),
        "abstained": sum(bool(row.get("abstained")) for row in rows),
        "abstention": abstention_summary(rows),
        "em": _mean([row["em"] for row in rows]),
        "f1": _mean([row["f1"] for row in rows]),
        "support_recall": _mean(recalls),
        "support_recall_questions": len(recalls),
        "sp_em": _mean([row["sp_em"] for row in facts]),
        "sp_f1": _mean([row["sp_f1"] for row in facts]),
        "joint_em": _mean([row["joint_em"] for row in facts]),
        "joint_f1": _mean([row["joint_f1"] for row in facts]),
        "sp_questions": len(facts),
        "format": {
            "steps": total_steps,
            "rejected_steps": sum(row["rejected_steps"] for row in rows),
            "rejected_step_rate": _rate(sum(row["rejected_steps"] for row in rows), total_steps),
            "format_error_runs": sum(bool(row["format_error"]) for row in rows),
            "format_error_run_rate": _rate(sum(bool(row["format_error"]) for row in rows), n),
            "actions": actions,
            "invalid_actions": sum(row["invalid_actions"] for row in rows),
            "invalid_action_rate": _rate(sum(row["invalid_actions"] for row in rows), actions),
            "grammar_rejections": _total(rows, "grammar_rejections"),
            "prevented_moves": _total(rows, "prevented_moves"),
        },
        "searches_per_question": _mean([searches_of(row) for row in rows]),
        "hops_per_question": _mean([hops_of(row) for row in rows]),
        "steps_per_question": {
            "mean": _mean(steps),
            "median": statistics.median(steps) if steps else None,
            "max": max(steps) if steps else None,
        },
        "tokens": {
            **tokens,
            "prompt_per_question": _rate(tokens["prompt"], n),
            "cached_per_question": _rate(tokens["cached"], n),
            "generated_per_question": _rate(tokens["generated"], n),
        },
        "seconds_per_question": {
            "median": _percentile(seconds, 50),
            "p90": _percentile(seconds, 90),
            "mean": _mean(seconds),
            "total": round(sum(seconds), 3),
        },
        "stop_reasons": {reason: stops.get(reason, 0) for reason in _stop_order(stops)},
        "answer_checks": _answer_checks(rows),
        "by_type": breakdown(rows, "type"),
        "by_level": breakdown(rows, "level"),
    }


def _stop_order(stops: Counter[str]) -> list[str]:
    return [*STOP_REASONS, *sorted(set(stops) - set(STOP_REASONS))]


def breakdown(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """Questions, EM, F1, searches and hops a question and the share answered after one search (`one_search`) per
    value of `key` ("type" or "level"); rows without it are left out."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get(key) is not None:
            groups.setdefault(str(row[key]), []).append(row)
    return {
        value: {
            "questions": len(group),
            "em": _mean([row["em"] for row in group]),
            "f1": _mean([row["f1"] for row in group]),
            "searches": _mean([searches_of(row) for row in group]),
            "hops": _mean([hops_of(row) for row in group]),
            "one_search": answered_after_one_search(group),
        }
        for value, group in sorted(groups.items())
    }
