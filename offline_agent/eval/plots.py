"""The report's PNG plots, drawn with matplotlib (the optional `report` extra) on the headless Agg backend.

One figure per question a reader asks of a comparison: how EM and F1 vary by question type and by level, how
many steps and seconds a question took, and how often the format failed. A breakdown that no run has (a dataset
without levels) gives no plot and a note instead.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offline_agent.errors import ConfigError
from offline_agent.eval.results import ResultsError

if TYPE_CHECKING:
    from offline_agent.eval.run_data import RunData

INSTALL_HINT = "pip install 'offline-agent[report]'"


def matplotlib_missing() -> str | None:
    """The line `report` shows when matplotlib cannot be imported (it then writes the report without plots),
    or None when the plots can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"matplotlib is not installed: writing the report without plots ({INSTALL_HINT} adds them)"
    return None


def require_matplotlib() -> Any:
    """matplotlib.pyplot on the Agg backend, or a ConfigError that says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigError(
            f"the report's plots need matplotlib, which is not installed: {INSTALL_HINT} (or pass --no-plots)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(runs: Sequence[RunData], out: Path) -> tuple[list[Path], list[str]]:
    """Draw every plot that has data into `out`; return the PNG paths and notes on plots left out."""
    plt = require_matplotlib()
    figures, notes = plot_figures(runs)
    return [_save(plt, figure, out / name) for name, figure in figures], notes


def png_plots(runs: Sequence[RunData]) -> tuple[list[tuple[str, bytes]], list[str]]:
    """Every plot that has data as (file name, PNG bytes), kept in memory (the HTML report inlines them)."""
    plt = require_matplotlib()
    figures, notes = plot_figures(runs)
    images = []
    for name, figure in figures:
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png", dpi=110)
        finally:
            plt.close(figure)
        images.append((name, buffer.getvalue()))
    return images, notes


def plot_figures(runs: Sequence[RunData]) -> tuple[list[tuple[str, Any]], list[str]]:
    """The figures that have data, each with its file name, and notes on the plots left out."""
    plt = require_matplotlib()
    figures: list[tuple[str, Any]] = []
    notes: list[str] = []
    for key, name, title in (
        ("by_type", "em_f1_by_type.png", "type"),
        ("by_level", "em_f1_by_level.png", "level"),
    ):
        if any(run.summary[key] for run in runs):
            figures.append((name, _grouped_scores(plt, runs, key, title)))
        else:
            notes.append(f"No plot by question {title}: no run's questions carry a {title}.")
    figures.append(("steps_per_question.png", _steps(plt, runs)))
    figures.append(("seconds_per_question.png", _distribution(plt, runs, "seconds", "Seconds per question", "seconds")))
    figures.append(("format_errors.png", _format_errors(plt, runs)))
    return figures, notes


def _save(plt: Any, figure: Any, path: Path) -> Path:
    try:
        figure.savefig(path, dpi=110)
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)
    return path


def _bars(axis: Any, groups: Sequence[str], series: Sequence[tuple[str, Sequence[float]]]) -> None:
    """Grouped bars: one group per x label, one bar per series (run)."""
    width = 0.8 / max(1, len(series))
    for number, (label, values) in enumerate(series):
        positions = [i + (number - (len(series) - 1) / 2) * width for i in range(len(groups))]
        bars = axis.bar(positions, values, width, label=label)
        axis.bar_label(bars, fmt="%.0f", fontsize="x-small", padding=1)
    axis.set_xticks(range(len(groups)), groups)


def _grouped_scores(plt: Any, runs: Sequence[RunData], key: str, title: str) -> Any:
    groups = sorted({group for run in runs for group in run.summary[key]})
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for axis, metric in zip(axes, ("em", "f1"), strict=True):
        series = [
            (run.name, [100 * ((run.summary[key].get(g) or {}).get(metric) or 0.0) for g in groups]) for run in runs
        ]
        _bars(axis, groups, series)
        axis.set_title(f"{metric.upper()} by question {title}")
        axis.set_ylabel("%")
        axis.set_ylim(0, 100)
    axes[-1].legend(fontsize="small")
    figure.tight_layout()
    return figure


def _distribution(plt: Any, runs: Sequence[RunData], field: str, title: str, unit: str) -> Any:
    """A box per run (whiskers, quartiles, median line, mean triangle) of one per-question number."""
    figure, axis = plt.subplots(figsize=(max(5.0, 1.4 * len(runs) + 2), 4.2))
    data = [[float(row[field]) for row in run.rows] for run in runs]
    axis.boxplot(data, showmeans=True)
    axis.set_xticks(range(1, len(runs) + 1), [run.name for run in runs], rotation=20, ha="right", fontsize="small")
    axis.set_title(title)
    axis.set_ylabel(unit)
    figure.tight_layout()
    return figure


def _steps(plt: Any, runs: Sequence[RunData]) -> Any:
    """Share of questions by number of steps taken, one bar per run at each count."""
    taken = [int(row["steps"]) for run in runs for row in run.rows]
    counts = [str(count) for count in range(min(taken), max(taken) + 1)]
    figure, axis = plt.subplots(figsize=(max(6.0, 0.6 * len(counts) * len(runs) + 2), 4.2))
    series = []
    for run in runs:
        total = len(run.rows)
        series.append((run.name, [100 * sum(int(row["steps"]) == int(c) for row in run.rows) / total for c in counts]))
    _bars(axis, counts, series)
    axis.set_title("Steps per question")
    axis.set_xlabel("steps")
    axis.set_ylabel("% of questions")
    axis.legend(fontsize="small")
    figure.tight_layout()
    return figure


def _format_errors(plt: Any, runs: Sequence[RunData]) -> Any:
    kinds = (
        ("rejected steps", "rejected_step_rate"),
        ("format-error runs", "format_error_run_rate"),
        ("invalid actions", "invalid_action_rate"),
    )
    figure, axis = plt.subplots(figsize=(8, 4.2))
    series = [(run.name, [100 * (run.summary["format"].get(key) or 0.0) for _, key in kinds]) for run in runs]
    _bars(axis, [label for label, _ in kinds], series)
    axis.set_title("Format errors")
    axis.set_ylabel("% (of steps, questions, actions)")
    axis.legend(fontsize="small")
    figure.tight_layout()
    return figure
