"""A run folder read back for reports: its name, config, results and the summary recomputed from them.

Below both the report (report.py: tables and Markdown) and its plots (plots.py), which both take these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent.eval.results import CONFIG, RESULTS, ResultsError, RunFolder
from offline_agent.eval.scoring import summarize


@dataclass
class RunData:
    """One run folder read back: its name, config, result rows and the summary recomputed from them."""

    name: str
    path: Path
    config: dict[str, Any]
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    duplicate_lines: int = 0  # result lines of a question counted once already (RunFolder.read_results)

    @property
    def model(self) -> str:
        return str((self.config.get("model") or {}).get("name") or "?")


def load_run(path: str | Path) -> RunData:
    """Read a run folder (config.json and results.jsonl); ResultsError when it is not one."""
    folder = RunFolder(path)
    if not folder.path.is_dir():
        raise ResultsError(f"run folder not found: {folder.path}")
    config = folder.read_config()
    if config is None:
        raise ResultsError(f"not a run folder: {folder.path} (no {CONFIG}; make one with `offline-agent eval`)")
    rows = folder.read_results(repair=False)
    if not rows:
        raise ResultsError(f"{folder.path} has no results yet ({RESULTS} is empty or missing)")
    return RunData(folder.path.name, folder.path, config, rows, summarize(rows), folder.duplicate_lines)


def unique_names(runs: Sequence[RunData]) -> list[RunData]:
    """The runs, named by folder name, or by path where two folders share a name."""
    names = [run.name for run in runs]
    for run in runs:
        if names.count(run.name) > 1:
            run.name = str(run.path)
    return list(runs)


__all__ = ["RunData", "load_run", "unique_names"]
