"""`offline-agent report`: compare run folders in a Markdown report (tables, and the plots of `plots.py`).

Every figure is recomputed from each folder's results.jsonl (a torn last line is skipped, never repaired here:
a report only reads), so a report can be made while a run is still going, and summary.json is never trusted
over the results it summarises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_agent.eval.results import ResultsError
from offline_agent.eval.run_data import RunData, load_run, unique_names
from offline_agent.eval.scoring import abstention_summary

# (column title, how to get the cell from a run's summary)
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("N", "questions"),
    ("EM", "em%"),
    ("F1", "f1%"),
    ("SP EM", "sp_em%"),
    ("SP F1", "sp_f1%"),
    ("Joint EM", "joint_em%"),
    ("Joint F1", "joint_f1%"),
    ("Support recall", "support_recall%"),
    ("Rejected steps", "format.rejected_step_rate%"),
    ("Format-error runs", "format.format_error_run_rate%"),
    ("Invalid actions", "format.invalid_action_rate%"),
    ("Moves prevented", "format.prevented_moves"),
    ("Steps/q", "steps_per_question.mean"),
    ("Prompt tok/q", "tokens.prompt_per_question"),
    ("Cached tok/q", "tokens.cached_per_question"),
    ("Gen tok/q", "tokens.generated_per_question"),
    ("s/q median", "seconds_per_question.median"),
    ("s/q p90", "seconds_per_question.p90"),
)

# Columns shown only when some run has them (supporting facts need a dataset with sentence-level facts).
_OPTIONAL = frozenset({"sp_em%", "sp_f1%", "joint_em%", "joint_f1%"})


def _value(summary: dict[str, Any], key: str) -> Any:
    value: Any = summary
    for part in key.rstrip("%").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _cell(value: Any, percent: bool) -> str:
    if value is None:
        return "n/a"
    if percent:
        return f"{100 * value:.1f}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def comparison_table(runs: Sequence[RunData]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table: one row per run (percentages for rates); the supporting-fact and joint
    columns only where some run has them."""
    columns = [
        (title, key)
        for title, key in _COLUMNS
        if key not in _OPTIONAL or any(_value(run.summary, key) is not None for run in runs)
    ]
    header = ["Run", "Agent", "Model", "Grammar", "Setting", *(title for title, _ in columns)]
    rows = []
    for run in runs:
        config = run.config
        cells = [run.name, str(config.get("agent")), run.model, str(config.get("grammar")), str(config.get("setting"))]
        cells += [_cell(_value(run.summary, key), key.endswith("%")) for _, key in columns]
        rows.append(cells)
    return header, rows


def breakdown_table(runs: Sequence[RunData], key: str) -> tuple[list[str], list[list[str]]]:
    """EM, F1, searches and hops a question and the share answered after one search per question type or level
    ("by_type", "by_level"), one row per run and group."""
    group_name = key.removeprefix("by_").capitalize()
    header = ["Run", group_name, "N", "EM", "F1", "Searches", "Hops", "Answered after 1 search %"]
    rows = []
    for run in runs:
        for group, scores in run.summary[key].items():
            scores_row = [str(scores["questions"]), _cell(scores["em"], True), _cell(scores["f1"], True)]
            # summaries written before searches (or hops) were counted lack the figure: n/a
            searches = [_cell(scores.get(name), False) for name in ("searches", "hops")]
            searches.append(_cell(scores.get("one_search"), True))
            rows.append([run.name, group, *scores_row, *searches])
    return header, rows


def stop_table(runs: Sequence[RunData]) -> tuple[list[str], list[list[str]]]:
    reasons: list[str] = []
    for run in runs:
        reasons += [reason for reason in run.summary["stop_reasons"] if reason not in reasons]
    header = ["Run", *reasons]
    rows = [[run.name, *(str(run.summary["stop_reasons"].get(r, 0)) for r in reasons)] for run in runs]
    return header, rows


def abstention_table(runs: Sequence[RunData]) -> tuple[list[str], list[list[str]]]:
    """Per run and kind of question (answerable, unanswerable): N, right, abstained, wrong, no answer, the share
    abstained (%), and the run's CRAG score (right - wrong over all, %) on its first row."""
    header = ["Run", "Questions", "N", "Right", "Abstained", "Wrong", "No answer", "Abstained %", "CRAG score %"]
    rows = []
    for run in runs:
        summary = run.summary.get("abstention") or abstention_summary(run.rows)
        score = _cell(summary["crag_score"], True)
        for kind in ("answerable", "unanswerable"):
            part = summary[kind]
            if not part["questions"]:
                continue
            counts = [str(part[name]) for name in ("questions", "right", "abstained", "wrong", "none")]
            rows.append([run.name, kind, *counts, _cell(part["abstained_rate"], True), score])
            score = ""  # the run's score once, on its first row
    return header, rows


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table; text columns left-aligned, number columns right-aligned."""

    def is_number(text: str) -> bool:
        return text.replace(".", "", 1).isdigit() or text == "n/a"

    numeric = [bool(rows) and all(is_number(row[i]) for row in rows) for i in range(len(header))]
    widths = [
        max(len(header[i]), *(len(row[i]) for row in rows)) if rows else len(header[i]) for i in range(len(header))
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric, strict=True))
        + "|"
    )
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def _profile(config: dict[str, Any]) -> str:
    """ ", profile NAME" for a run recorded with its settings profile (folders from before profiles have none)."""
    return f", profile {config['profile']}" if config.get("profile") else ""


def render_markdown(runs: Sequence[RunData], plots: Sequence[Path], notes: Sequence[str] = ()) -> str:
    """The whole report.md: the comparison, breakdowns, stop reasons, the runs' configs, and the plots."""
    parts = ["# Evaluation report", "", markdown_table(*comparison_table(runs)), ""]
    parts += [
        "EM, F1, support recall (supporting titles among the passages the agent saw) and the three rates are "
        "percentages; SP and Joint (where the dataset has sentence-level supporting facts) are HotpotQA's "
        "supporting-fact and joint scores. Rejected steps: steps the parser rejected; format-error runs: questions "
        "that ended on a rejected step; invalid actions: actions the tool refused, among all actions. Tokens and "
        "seconds are per question.",
        "",
    ]
    for key, title in (("by_type", "By question type"), ("by_level", "By level")):
        header, rows = breakdown_table(runs, key)
        if rows:
            parts += [f"## {title}", "", markdown_table(header, rows), ""]
    parts += ["## Stop reasons", "", markdown_table(*stop_table(runs)), ""]
    parts += ["## Right, abstained, wrong (CRAG score: right - wrong over all)", ""]
    parts += [markdown_table(*abstention_table(runs)), ""]
    parts += ["## Runs", ""]
    for run in runs:
        config = run.config
        model = config.get("model") or {}
        dataset = config.get("dataset") or {}
        corpus = config.get("corpus") or {}
        parts.append(
            f"- `{run.name}` ({run.path}): agent {config.get('agent')}{_profile(config)}, model {run.model} "
            f"(sha256 {str(model.get('sha256'))[:12]}), grammar {config.get('grammar')} "
            f"({str(config.get('grammar_sha256'))[:12]}), prompt {str(config.get('prompt_sha256'))[:12]}, "
            f"seed {config.get('seed')}, dataset {Path(str(dataset.get('path'))).name} "
            f"({str(dataset.get('sha256'))[:12]}), {config.get('setting')} corpus {corpus.get('description')}, "
            f"version {config.get('version')}; {run.summary['questions']} questions"
        )
    parts.append("")
    if plots:
        parts += ["## Plots", ""]
        parts += [f"![{plot.stem.replace('_', ' ')}]({plot.name})" for plot in plots]
        parts.append("")
    if notes:
        parts += [f"_{note}_" for note in notes] + [""]
    return "\n".join(parts)


def write_report(runs: Sequence[RunData], out: str | Path, *, plots: bool = True) -> tuple[Path, list[Path]]:
    """Write report.md (and the PNG plots, unless `plots` is False) into `out`; return their paths."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"cannot create the report folder {out}: {exc.strerror or exc}") from None
    images: list[Path] = []
    notes: list[str] = []
    if plots:
        from offline_agent.eval.plots import write_plots

        images, notes = write_plots(runs, out)
    path = out / "report.md"
    try:
        path.write_text(render_markdown(runs, images, notes), encoding="utf-8")
        (out / "report.json").write_text(
            json.dumps({run.name: run.summary for run in runs}, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise ResultsError(f"cannot write the report in {out}: {exc.strerror or exc}") from None
    return path, images


__all__ = [
    "RunData",
    "breakdown_table",
    "comparison_table",
    "load_run",
    "markdown_table",
    "render_markdown",
    "stop_table",
    "abstention_table",
    "unique_names",
    "write_report",
]
