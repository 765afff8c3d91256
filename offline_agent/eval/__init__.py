"""Evaluation: QA datasets, answer and retrieval metrics, the resumable runner, and reports that compare runs.

`run_evaluation(EvalOptions(...))` is what `offline-agent eval` calls; pass `backend=` to run without loading a
model (tests use the scripted backend). `load_run`, `write_report` and `write_html` are what `offline-agent report`
calls.
"""

from __future__ import annotations

from offline_agent.eval.corpora import SETTINGS, EvalCorpus, open_eval_corpus
from offline_agent.eval.datasets import Dataset, DatasetError, Paragraph, QARecord, load_dataset
from offline_agent.eval.html_report import write_html
from offline_agent.eval.metrics import exact_match, f1_precision_recall, f1_score, normalize_answer
from offline_agent.eval.report import RunData, load_run, write_report
from offline_agent.eval.results import ResultsError, RunFolder
from offline_agent.eval.runner import EvalCallbacks, EvalOptions, EvalRun, prepare_evaluation, run_evaluation
from offline_agent.eval.scoring import result_row, summarize, support_recall

__all__ = [
    "Dataset",
    "DatasetError",
    "EvalCallbacks",
    "EvalCorpus",
    "EvalOptions",
    "EvalRun",
    "Paragraph",
    "QARecord",
    "ResultsError",
    "RunData",
    "RunFolder",
    "SETTINGS",
    "exact_match",
    "f1_precision_recall",
    "f1_score",
    "load_dataset",
    "load_run",
    "normalize_answer",
    "open_eval_corpus",
    "prepare_evaluation",
    "result_row",
    "run_evaluation",
    "summarize",
    "support_recall",
    "write_html",
    "write_report",
]
