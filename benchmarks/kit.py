"""What the benchmark scripts share: where the repository and the evaluation data are, and how an answer is found
in a text.

The scripts are modules of the `benchmarks` package, run from the repository root as
`python -m benchmarks.speed.NAME` or `python -m benchmarks.answers.NAME`; Python then puts the root first on
sys.path, so `offline_agent` is this checkout's package (a worktree of another commit runs that commit's code, as
the replay scripts need). A script that starts itself again in a subprocess does so with `module_command` and
`cwd=ROOT`, for the same reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench"  # synthetic corpora and indexes the scripts build once (git-ignored)
# The evaluation data beside the repository (docs/DESIGN.md, "Data"); OFFLINE_AGENT_SHARED_DATA moves it.
DATA = Path(os.environ.get("OFFLINE_AGENT_SHARED_DATA") or ROOT.parent / "shared" / "data")
HOTPOT_DEV = DATA / "hotpotqa" / "hotpot_dev200_distractor.json"
HOTPOT_POOL = DATA / "hotpotqa" / "hotpot_pool5716_corpus.jsonl"
PG_QUESTIONS = DATA / "pgdocs" / "questions.jsonl"
PG_HTML = Path("/usr/share/doc/postgresql-doc-15/html")  # Debian's postgresql-doc-15, as scripts/install.sh installs
SCIFACT = DATA / "scifact"
SAMPLE = ROOT / "corpora" / "sample"
SAMPLE_QUESTIONS = SAMPLE / "questions.jsonl"
# Questions whose answer the corpus does not hold (issue 74): the right outcome is an abstention.
SAMPLE_UNANSWERABLE = SAMPLE / "unanswerable.jsonl"
PG_UNANSWERABLE = ROOT / "benchmarks" / "answers" / "data" / "pgdocs_unanswerable.jsonl"

# The three development corpora: name -> (questions, corpus); the PostgreSQL manual's corpus is an index, named
# by the script that reads it.
DEV_CORPORA: dict[str, tuple[Path, Path | None]] = {
    "sample": (SAMPLE_QUESTIONS, SAMPLE),
    "pgdocs": (PG_QUESTIONS, None),
    "dev200": (HOTPOT_DEV, HOTPOT_POOL),
}


def module_command(module: str) -> list[str]:
    """The command that runs benchmark module `module` (`__spec__.name`) in a fresh interpreter; run it with
    `cwd=ROOT`."""
    return [sys.executable, "-m", module]


def holds(text: str, answers: tuple[str, ...]) -> bool:
    """Whether `text` holds one of `answers` as a whole-word run, both normalized as eval's exact match is."""
    from offline_agent.normalize import normalize_answer

    padded = f" {normalize_answer(text)} "
    return any(f" {answer} " in padded for answer in (normalize_answer(x) for x in answers) if answer)


__all__ = [
    "CACHE",
    "DATA",
    "DEV_CORPORA",
    "HOTPOT_DEV",
    "HOTPOT_POOL",
    "PG_HTML",
    "PG_QUESTIONS",
    "PG_UNANSWERABLE",
    "ROOT",
    "SAMPLE",
    "SAMPLE_QUESTIONS",
    "SAMPLE_UNANSWERABLE",
    "SCIFACT",
    "module_command",
    "holds",
]
