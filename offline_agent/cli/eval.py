"""`offline-agent eval` and `offline-agent report`: run a QA benchmark into a run folder, compare run folders.

A thin layer over `offline_agent.eval`: options in, a progress view on stderr (a bar with running EM, F1 and
format-error rate on a terminal, one line per question otherwise), the summary table on stdout.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from offline_agent.backends.registry import setup_time_limit
from offline_agent.cli.legacy import OptionsCommand
from offline_agent.cli.options import RunChoice, run_options
from offline_agent.cli.sections import CORPUS, HTTP, LLAMACPP, OUTPUT, place
from offline_agent.eval.corpora import SETTINGS


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


class EvalProgress:
    """The progress view: a rich bar on a terminal, plain lines otherwise, nothing when quiet."""

    def __init__(self, total: int, done: int, *, quiet: bool, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.total = total
        self.count = done
        self.bar: Any = None
        self.task: Any = None
        if quiet or not (hasattr(self.stream, "isatty") and self.stream.isatty()):
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[scores]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=self.stream),
            transient=False,
        )
        self.task = self.bar.add_task("eval", total=total, completed=done, scores="")

    def __enter__(self) -> EvalProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def result(self, row: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        from offline_agent.eval.scoring import running_scores

        self.count += 1
        scores = running_scores(rows)
        text = f"EM {_pct(scores['em'])}  F1 {_pct(scores['f1'])}  format errors {_pct(scores['format_error_rate'])}%"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, scores=text)
        elif not self.quiet:
            answer = row["prediction"] if row["prediction"] is not None else f"({row['stop_reason']})"
            click.echo(
                f"[{self.count}/{self.total}] {row['id']}  EM {row['em']:.0f}  F1 {row['f1']:.2f}  "
                f"{row['steps']} steps  {row['seconds']:.1f} s  {answer!r}  |  running {text}",
                file=self.stream,
            )


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The few lines printed at the end of a run."""
    fmt = summary["format"]
    seconds = summary["seconds_per_question"]
    tokens = summary["tokens"]
    stops = ", ".join(f"{reason} {count}" for reason, count in summary["stop_reasons"].items() if count)
    facts = (
        f"  SP EM {_pct(summary['sp_em'])} F1 {_pct(summary['sp_f1'])}  joint EM {_pct(summary['joint_em'])} "
        f"F1 {_pct(summary['joint_f1'])}"
        if summary.get("sp_questions")
        else ""
    )
    checks = summary.get("answer_checks") or {}
    refused = ", ".join(f"{reason} {count}" for reason, count in (checks.get("refused_finals") or {}).items())
    build = (checks.get("grammar_build_ms") or {}).get("median")
    compiled = (checks.get("grammar_compile_ms") or {}).get("median")
    grounded = (
        f"grounding: the grammar refused the model's first choice in a Final {checks['grounding_refusals']} times "
        f"(in {checks['questions_with_grounding_refusals']} questions); per grounded step (median of "
        f"{checks['grounded_steps']}): grammar built in {_num(build)} ms, compiled in {_num(compiled)} ms"
        if checks.get("grounding_refusals") is not None
        else None
    )
    check_lines = [
        *([grounded] if grounded else []),
        *(
            [f"answer checks refused: {refused} (in {checks['questions_with_refused_finals']} questions)"]
            if refused
            else []
        ),
    ]
    return [
        f"questions {summary['questions']}  EM {_pct(summary['em'])}  F1 {_pct(summary['f1'])}  "
        f"support recall {_pct(summary['support_recall'])}{facts}",
        f"format: rejected steps {_pct(fmt['rejected_step_rate'])}%  format-error runs "
        f"{_pct(fmt['format_error_run_rate'])}%  invalid actions {fmt['invalid_actions']} of {fmt['actions']}",
        f"cost: steps/question {_num(summary['steps_per_question']['mean'])}  seconds/question median "
        f"{_num(seconds['median'])} p90 {_num(seconds['p90'])}  tokens/question prompt "
        f"{_num(tokens['prompt_per_question'])} (cached {_num(tokens['cached_per_question'])}) "
        f"generated {_num(tokens['generated_per_question'])}",
        f"stop reasons: {stops or 'none'}",
        *_abstention_lines(summary),
        *_type_lines(summary),
        *check_lines,
    ]


def _abstention_lines(summary: dict[str, Any]) -> list[str]:
    """Right / abstained / wrong / no answer for answerable and unanswerable questions apart, and the CRAG score."""
    parts = summary.get("abstention")
    if not parts:
        return []
    kinds = [
        f"{kind} {part['questions']}: right {part['right']}, abstained {part['abstained']} "
        f"({_pct(part['abstained_rate'])}%), wrong {part['wrong']}, no answer {part['none']}"
        for kind, part in ((kind, parts[kind]) for kind in ("answerable", "unanswerable"))
        if part["questions"]
    ]
    return [f"{'; '.join(kinds)}; CRAG score {_pct(parts['crag_score'])}%"]


def _type_lines(summary: dict[str, Any]) -> list[str]:
    """One line per question type: EM, searches and hops a question (a hop searches for a name read earlier), and
    the share answered after a single search (a bridge question answered so never searched for its second page)."""
    return [
        f"{kind}: {scores['questions']} questions  EM {_pct(scores['em'])}  searches/question "
        f"{_num(scores.get('searches'))}  hops/question {_num(scores.get('hops'))}  answered after one search "
        f"{_pct(scores.get('one_search'))}%"
        for kind, scores in summary.get("by_type", {}).items()
    ]


@click.command("eval", cls=OptionsCommand)
@click.argument("dataset", type=click.Path(path_type=Path))
@run_options(
    max_steps_help="Most model turns per question (cot and standard always take one).",
    max_seconds_help="Stop a question after this many seconds (stop reason timeout).",
    corpus=False,
)
@place(
    {
        **dict.fromkeys(("setting", "pool", "limit"), CORPUS),
        "concurrency": HTTP,
        "parallel": LLAMACPP,
        **dict.fromkeys(("out", "as_json", "quiet"), OUTPUT),
    }
)
@click.option(
    "--setting",
    type=click.Choice(SETTINGS),
    default=None,
    help="distractor: each question searches its own context; pooled: one index over all paragraphs "
    "(or --pool). Default: distractor for a dataset with contexts, else pooled.",
)
@click.option(
    "--pool",
    type=click.Path(path_type=Path),
    default=None,
    metavar="CORPUS",
    help="Corpus of the pooled setting: a JSONL of {id, title, text}, a folder of documents, an index folder, or "
    "an index's name (as ask --corpus takes it).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Run the first N questions of the dataset.")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Questions in flight at once (--backend http only: a server batches them); results.jsonl keeps the "
    "dataset's order and the answers are those of --concurrency 1.",
)
@click.option(
    "--parallel",
    type=click.IntRange(1, 64),
    default=None,
    help="Decode N questions at once in one llama.cpp context (N sequences; a finished question's "
    "sequence is taken by the next). results.jsonl keeps the dataset's order. llama.cpp's logits shift with "
    "how sequences are batched, so near-ties can flip and some answers differ from --parallel 1; on 2 CPU "
    "cores it is no faster (prompts dominate) [default: 1].",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run folder [default: runs/<dataset>-<setting>-<agent>-<model>].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def eval_command(
    dataset: Path,
    run: RunChoice,
    setting: str | None,
    pool: Path | None,
    limit: int | None,
    concurrency: int,
    out: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Evaluate an agent on DATASET with a local model; results go to a run folder that resumes.

    DATASET is the official HotpotQA JSON (questions with their context paragraphs and supporting facts) or a
    JSONL of {id, question, answer[, supporting_titles]} searched over --pool (the sample questions default to
    the sample corpus). Interrupt and rerun the same command to resume: finished questions are skipped, and a
    larger --limit goes on where the last run stopped. A different configuration (model, agent, grammar, seed,
    dataset, corpus, ...) is refused in a folder that holds another; a folder made with the step budget hint on
    resumes with --budget-hint. The folder holds config.json (what the run is), results.jsonl
    (one line per question, with the whole trajectory) and summary.json (every question in the folder).

    \b
    Examples:
      offline-agent eval corpora/sample/questions.jsonl --limit 10
      offline-agent eval hotpot_dev_distractor_v1.json --setting pooled --agent cot --limit 50
      offline-agent eval questions.jsonl --pool corpus.jsonl --grammar off --out runs/react-nogrammar

    Exit status: 0 done, 1 error (one line on stderr; the folder stays resumable), 2 bad usage, 130 interrupted.
    """
    from offline_agent.eval.runner import EvalCallbacks, EvalOptions, prepare_evaluation

    # a model server must answer within --max-seconds
    click.get_current_context().with_resource(setup_time_limit(run.settings.config.max_seconds))

    def status(message: str) -> None:
        if not quiet:
            click.echo(message, err=True)

    options = EvalOptions(
        dataset=dataset,
        settings=run.settings,
        model=run.model,
        setting=setting,
        pool=pool,
        limit=limit,
        out=out,
        context_size=run.context_size,
        backend=run.backend.name,
        backend_options=replace(run.backend.options, model=None, context_size=None, seed=None),
        concurrency=concurrency,
    )
    prepared = prepare_evaluation(options, status=status)
    pending = len(prepared.pending)
    done = len(prepared.selected) - pending
    status(
        f"run folder: {prepared.folder.path} ("
        + (f"resuming: {done} done, {pending} to go)" if prepared.resumed else f"new: {pending} questions)")
    )
    with EvalProgress(len(prepared.selected), done, quiet=quiet) as progress:
        summary = prepared.run(EvalCallbacks(on_result=progress.result))
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for line in summary_lines(summary):
            click.echo(line)
        status(f"results: {prepared.folder.results_path}; summary: {prepared.folder.summary_path}")


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for report.md, report.json and the PNG plots [default: report, unless only --html is asked for].",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write one self-contained HTML file (no network needed): the table, the plots and every question "
    "of every run with its trajectory, filters, and two runs side by side.",
)
@click.option("--no-plots", is_flag=True, help="Write the tables only (no matplotlib needed).")
@click.option("--json", "as_json", is_flag=True, help="Print the runs' summaries as JSON instead of the table.")
def report(runs: tuple[Path, ...], out: Path | None, html_path: Path | None, no_plots: bool, as_json: bool) -> None:
    """Compare run folders: write OUT/report.md with a table and plots, and/or one HTML file; print the table.

    Each run's figures are recomputed from its results.jsonl. The plots (EM and F1 by question type and level,
    steps and seconds per question, format errors) need matplotlib: pip install 'offline-agent[report]'; without
    it the report is written without plots, and one line on stderr says so.

    \b
    Examples:
      offline-agent report runs/A runs/B --out report/
      offline-agent report runs/A runs/B --html report.html    # open it in any browser, offline
    """
    from offline_agent.eval.report import comparison_table, load_run, markdown_table, unique_names, write_report

    if not no_plots:
        from offline_agent.eval.plots import matplotlib_missing

        missing = matplotlib_missing()
        if missing:
            click.echo(missing, err=True)
            no_plots = True
    loaded = unique_names([load_run(path) for path in runs])
    for run in loaded:
        if run.duplicate_lines:
            click.echo(
                f"note: {run.path}: {run.duplicate_lines} duplicated result lines, each question counted once", err=True
            )
    if out is None and html_path is None:
        out = Path("report")
    if out is not None:
        path, images = write_report(loaded, out, plots=not no_plots)
    if html_path is not None:
        from offline_agent.eval.html_report import write_html

        write_html(loaded, html_path, plots=not no_plots)
    if as_json:
        click.echo(json.dumps({run.name: run.summary for run in loaded}, indent=2, sort_keys=True))
    else:
        click.echo(markdown_table(*comparison_table(loaded)))
    if out is not None:
        click.echo(f"report: {path}" + (f" ({len(images)} plots)" if images else ""), err=True)
    if html_path is not None:
        click.echo(f"html report: {html_path} ({html_path.stat().st_size / 1e6:.1f} MB)", err=True)


COMMANDS = [eval_command, report]

__all__ = ["COMMANDS", "EvalProgress", "eval_command", "report", "summary_lines"]
