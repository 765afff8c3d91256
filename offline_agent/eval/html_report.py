"""`offline-agent report --html`: one self-contained HTML file with the comparison and every trajectory.

The file needs no network: the styles and the viewer script (report_assets/) are inlined, the plots are PNGs in
data: URLs, and the runs' data is embedded once as JSON in `<script type="application/json">` blocks: one for the
table (runs, questions, one row per run and question), then one per trajectory, after the viewer's script. The
viewer renders the table in chunks as it scrolls, before the browser has even read the trajectories, and parses
a trajectory only when its row is opened, so a report of 1,000 questions x 2 runs opens at once.

Escaping: the tables made here go through `html.escape`; in the embedded JSON every `<`, `>` and `&` is written
as a \\u escape, so no text (a `</script>` in an Observation) can close the block; the viewer puts data on the
page through textContent only, never as markup.

Per step the report keeps what a reader needs (thought, action, observation, final, parse error, rejections,
prevented moves, tokens, seconds, the strategy's details, and for a search that is a hop its bridge and the step
that read it, hops.py); the raw model text only where it did not parse.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from offline_agent._version import __version__
from offline_agent.eval.report import RunData, abstention_table, breakdown_table, comparison_table, stop_table
from offline_agent.eval.results import ResultsError
from offline_agent.eval.scoring import row_outcome
from offline_agent.hops import saved_hops

_ASSETS = Path(__file__).resolve().parent / "report_assets"
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_DROPPED_DETAILS = ("ids", "rejections", "prevented", "action_path")  # shown elsewhere, or only noise


def script_json(data: Any) -> str:
    """`data` as JSON that is safe inside a <script> element (no `<`, `>` or `&` left unescaped)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in _JSON_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def _step(step: dict[str, Any]) -> dict[str, Any]:
    details = dict(step.get("details") or {})
    usage = step.get("usage") or {}
    out: dict[str, Any] = {
        "index": step.get("index", 0),
        "thought": step.get("thought"),
        "action": step.get("action"),
        "argument": step.get("argument"),
        "observation": step.get("observation"),
        "final": step.get("final"),
        "parse_error": step.get("parse_error"),
        "tool_error": bool(step.get("tool_error")),
        "final_only": bool(step.get("final_only")),
        "attempts": step.get("attempts", 1),
        "finish_reason": step.get("finish_reason", "stop"),
        "tokens": [usage.get("prompt_tokens", 0), usage.get("cached_tokens", 0), usage.get("generated_tokens", 0)],
        "seconds": round(float(step.get("seconds") or 0.0), 3),
        "rejections": details.get("rejections") or [],
        "prevented": int(details.get("prevented") or 0),
        "details": {key: value for key, value in details.items() if key not in _DROPPED_DETAILS},
    }
    if details.get("action_path"):
        out["path"] = list(details["action_path"])
    if step.get("parse_error") or not (step.get("thought") or step.get("action") or step.get("final")):
        out["raw"] = step.get("raw", "")
    return out


def report_data(runs: Sequence[RunData]) -> dict[str, Any]:
    """What the viewer reads: the runs, each question once, one row per (run, question), and the trajectories."""
    questions: list[dict[str, Any]] = []
    number: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    trajectories: list[dict[str, Any]] = []
    for run_number, run in enumerate(runs):
        for row in run.rows:
            key = str(row["id"])
            if key not in number:
                number[key] = len(questions)
                questions.append(
                    {
                        "id": key,
                        "q": row.get("question", ""),
                        "gold": row.get("gold", ""),
                        "type": row.get("type"),
                        "level": row.get("level"),
                    }
                )
            rows.append(
                {
                    "r": run_number,
                    "q": number[key],
                    "p": row.get("prediction"),
                    "em": row.get("em", 0.0),
                    "f1": row.get("f1", 0.0),
                    "stop": row.get("stop_reason"),
                    "o": row_outcome(row),  # right, abstained, wrong or none (scoring.outcome)
                    "steps": row.get("steps", 0),
                    "s": round(float(row.get("seconds") or 0.0), 3),
                    "tok": [row.get("prompt_tokens", 0), row.get("cached_tokens", 0), row.get("generated_tokens", 0)],
                    "sp": row.get("sp_f1"),
                    "jf1": row.get("joint_f1"),
                }
            )
            trajectory = row.get("trajectory") or {}
            steps = [_step(step) for step in trajectory.get("steps") or ()]
            for hop in saved_hops(str(row.get("question") or ""), trajectory.get("steps") or ()):
                steps[hop.step]["hop"] = {"bridge": hop.bridge, "read_at": hop.read_at}
            trajectories.append({"error": trajectory.get("error"), "steps": steps})
    return {
        "runs": [
            {"name": run.name, "agent": run.config.get("agent"), "model": run.model, "questions": len(run.rows)}
            for run in runs
        ],
        "questions": questions,
        "rows": rows,
        "traj": trajectories,
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def is_number(text: str) -> bool:
        return text.replace(".", "", 1).isdigit() or text == "n/a"

    numeric = [bool(rows) and all(is_number(row[i]) for row in rows) for i in range(len(header))]
    head = "".join(
        f"<th{' class=num' if num else ''}>{html.escape(cell)}</th>" for cell, num in zip(header, numeric, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=num' if num else ''}>{html.escape(cell)}</td>" for cell, num in zip(row, numeric, strict=True)
        )
        + "</tr>"
        for row in rows
    )
    table = f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="scroll">{table}</div>'


def _overview(runs: Sequence[RunData], images: Sequence[tuple[str, bytes]], notes: Sequence[str]) -> str:
    parts = ["<h2>Comparison</h2>", _table(*comparison_table(runs))]
    parts.append(
        '<p class="note">EM, F1, SP and Joint (HotpotQA\'s supporting-fact and joint scores, where the dataset has '
        "sentence-level facts), support recall and the rates are percentages. Rejected steps: steps the parser "
        "rejected; format-error runs: questions that ended on a rejected step; invalid actions: actions the tool "
        "refused. Tokens and seconds are per question. Every figure is recomputed from each run's results.jsonl.</p>"
    )
    for key, title in (("by_type", "By question type"), ("by_level", "By level")):
        header, rows = breakdown_table(runs, key)
        if rows:
            parts += [f"<h2>{title}</h2>", _table(header, rows)]
    parts += ["<h2>Stop reasons</h2>", _table(*stop_table(runs))]
    header, rows = abstention_table(runs)
    parts += ["<h2>Right, abstained, wrong</h2>", _table(header, rows)]
    parts.append(
        '<p class="note">Per run, answerable and unanswerable questions apart: answered right (EM 1), '
        "abstained (the documents do not say), answered wrong (every answer to an unanswerable question), no answer "
        "(max steps, time, error). CRAG score: (right - wrong) / all questions of the run.</p>"
    )
    if images:
        parts.append('<h2>Plots</h2><div class="plots">')
        for name, data in images:
            label = html.escape(name.removesuffix(".png").replace("_", " "))
            encoded = base64.b64encode(data).decode("ascii")
            parts.append(f'<img alt="{label}" title="{label}" src="data:image/png;base64,{encoded}">')
        parts.append("</div>")
    parts += [f'<p class="note">{html.escape(note)}</p>' for note in notes]
    parts.append("<h2>Runs</h2><ul>")
    for run in runs:
        config = run.config
        dataset = config.get("dataset") or {}
        parts.append(
            "<li>"
            + html.escape(
                f"{run.name} ({run.path}): agent {config.get('agent')}, model {run.model} "
                f"(sha256 {str((config.get('model') or {}).get('sha256'))[:12]}), grammar {config.get('grammar')}, "
                f"seed {config.get('seed')}, dataset {Path(str(dataset.get('path'))).name}, "
                f"{config.get('setting')} setting, version {config.get('version')}; {len(run.rows)} questions"
            )
            + "</li>"
        )
    parts.append("</ul>")
    return "\n".join(parts)


_FILTERS = """
<div class="filters">
  <label>Run <select id="filter-run"><option value="">all</option></select></label>
  <label>Type <select id="filter-type"><option value="">all</option></select></label>
  <label>Level <select id="filter-level"><option value="">all</option></select></label>
  <label>Answer <select id="filter-outcome"><option value="">all</option><option value="right">right</option>
    <option value="wrong">wrong or none</option><option value="abstained">abstained</option></select></label>
  <label>Stop reason <select id="filter-stop"><option value="">all</option></select></label>
  <input id="filter-text" type="search" placeholder="Search question, gold, prediction, id" aria-label="Search">
  <span id="row-count"></span>
</div>
<div class="scroll"><table id="questions">
  <thead><tr><th>Run</th><th>Id</th><th>Question</th><th>Gold</th><th>Prediction</th><th>EM</th><th>F1</th>
  <th>Type</th><th>Level</th><th>Stop</th><th>Steps</th><th>Seconds</th></tr></thead>
  <tbody id="rows"></tbody>
</table></div>
<button class="more" id="rows-more" hidden>Show more</button>
<p class="note">Click a row to open its trajectory step by step.</p>
"""

_COMPARE = """
<div class="filters">
  <label>Run A <select id="compare-a"></select></label>
  <label>Run B <select id="compare-b"></select></label>
  <label>Show <select id="compare-direction">
    <option value="changed">answers that changed</option>
    <option value="wrong->right">wrong &#8594; right</option>
    <option value="right->wrong">right &#8594; wrong</option>
    <option value="wrong->wrong">wrong &#8594; another wrong</option>
    <option value="all">every question in both</option>
  </select></label>
</div>
<p id="compare-summary"></p>
<div class="scroll"><table id="compare">
  <thead><tr><th>Id</th><th>Question</th><th>Gold</th><th>Run A</th><th>Run B</th><th>Change</th></tr></thead>
  <tbody id="compare-rows"></tbody>
</table></div>
<button class="more" id="compare-more" hidden>Show more</button>
<p class="note">Click a row to see both trajectories side by side.</p>
"""


def render_html(runs: Sequence[RunData], images: Sequence[tuple[str, bytes]] = (), notes: Sequence[str] = ()) -> str:
    """The whole report as one HTML document."""
    names = ", ".join(run.name for run in runs)
    total = sum(len(run.rows) for run in runs)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = report_data(runs)
    trajectories = "\n".join(
        f'<script type="application/json" id="t{number}">{script_json(trajectory)}</script>'
        for number, trajectory in enumerate(table.pop("traj"))
    )
    style = (_ASSETS / "report.css").read_text(encoding="utf-8")
    script = (_ASSETS / "report.js").read_text(encoding="utf-8")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; \
script-src 'unsafe-inline'">
<title>Evaluation report: {html.escape(names)}</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>Evaluation report</h1>
<p>{len(runs)} run{"s" if len(runs) != 1 else ""} ({html.escape(names)}), {total} answers; made {created} by \
offline-agent {html.escape(__version__)}</p>
<nav><button data-tab="overview" aria-selected="true">Overview</button><button data-tab="questions">Questions \
and trajectories</button><button data-tab="compare">Compare two runs</button></nav>
</header>
<main>
<section data-panel="overview">{_overview(runs, images, notes)}</section>
<section data-panel="questions" hidden>{_FILTERS}</section>
<section data-panel="compare" hidden>{_COMPARE}</section>
</main>
<script type="application/json" id="report-data">{script_json(table)}</script>
<script>{script}</script>
{trajectories}
</body>
</html>
"""


def write_html(runs: Sequence[RunData], path: str | Path, *, plots: bool = True) -> tuple[Path, list[str]]:
    """Write the HTML report to `path` (atomically); return the path and notes on plots left out."""
    images: list[tuple[str, bytes]] = []
    notes: list[str] = []
    if plots:
        from offline_agent.eval.plots import png_plots

        images, notes = png_plots(runs)
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        if path.parent != Path(""):
            path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(render_html(runs, images, notes), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise ResultsError(f"cannot write the HTML report {path}: {exc.strerror or exc}") from None
    return path, notes
