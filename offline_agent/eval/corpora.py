"""What the agent searches during an evaluation: the distractor and pooled settings.

- distractor: each question searches only its own context paragraphs (HotpotQA gives ten per question: the two
  gold ones and eight distractors), through a small in-memory BM25 index built for that question;
- pooled: one index over every distinct paragraph of the dataset file, or over the corpus given with `--pool`
  (a JSONL of `{id, title, text}`, a folder of documents, an index folder, or the name of an index built with
  `offline-agent index`, resolved as `ask --corpus` resolves it), searched by every question. The
  sample questions (corpora/sample/questions.jsonl) default to the sample corpus as their pool.

The corpus sha256 identifies what could be found: it hashes the passages themselves (document id, title,
text), not file paths, so a moved pool still matches its run folder and a changed one does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent.errors import ConfigError
from offline_agent.eval.datasets import Dataset, Paragraph, QARecord

SETTINGS = ("distractor", "pooled")


def default_pool(dataset: Dataset) -> Path | None:
    """The corpus a dataset goes with when no --pool is given: the sample corpus for the sample questions."""
    from offline_agent.resources import sample_corpus, sample_questions

    try:
        is_sample = dataset.path.resolve() == sample_questions().resolve()
    except OSError:
        return None
    return sample_corpus() if is_sample and not dataset.has_context else None


def resolve_setting(setting: str | None, dataset: Dataset, pool: str | Path | None) -> str:
    """The setting to run: as asked, else distractor for a dataset with contexts and no pool, else pooled."""
    if setting is None:
        setting = "distractor" if dataset.has_context and pool is None else "pooled"
    if setting not in SETTINGS:
        raise ConfigError(f"unknown setting {setting!r}; choose from {list(SETTINGS)}")
    if setting == "distractor":
        if pool is not None:
            raise ConfigError(
                "--pool goes with --setting pooled (the distractor setting searches each question's context)"
            )
        if not dataset.has_context:
            raise ConfigError(
                f"the distractor setting needs each question's context paragraphs, and {dataset.path} has none; "
                "use --setting pooled --pool CORPUS"
            )
    elif pool is None and not dataset.has_context:
        raise ConfigError(f"{dataset.path} has no context paragraphs to pool; give the corpus with --pool CORPUS")
    return setting


def paragraph_index(paragraphs: Sequence[Paragraph]) -> Any:
    """An in-memory BM25 index with one passage per paragraph (document id = title)."""
    from offline_agent.retrieval import BM25Index, Passage

    passages = [
        Passage(number, paragraph.title, paragraph.title, paragraph.text, "dataset", 0, len(paragraph.text))
        for number, paragraph in enumerate(paragraphs)
    ]
    return BM25Index.build(passages)


def index_sha256(index: Any) -> str:
    """A hash of every live passage of `index` (document id, title, text), in id order."""
    digest = hashlib.sha256()
    for passage_id in index.ids():
        passage = index.passage(int(passage_id))
        digest.update(f"{passage.doc_id}\0{passage.title}\0{passage.text}\0".encode())
    return digest.hexdigest()


@dataclass
class EvalCorpus:
    """The index (or indexes) of one evaluation, and the sha256 that identifies them."""

    setting: str
    sha256: str
    description: str
    pooled_index: Any | None = None
    passages: int = 0

    def index_for(self, record: QARecord) -> Any:
        """The index `record` searches: the pooled one, or one built from its own context."""
        if self.pooled_index is not None:
            return self.pooled_index
        return paragraph_index(record.context)

    def label_for(self, record: QARecord) -> str:
        """What a trajectory records as its corpus."""
        return self.description if self.pooled_index is not None else f"{self.description}#{record.id}"


def open_eval_corpus(setting: str, dataset: Dataset, pool: str | Path | None) -> EvalCorpus:
    """Build the index of the pooled setting (from --pool or the dataset's paragraphs), or prepare distractor."""
    if setting == "distractor":
        digest = hashlib.sha256(f"distractor\0{dataset.sha256}".encode()).hexdigest()
        return EvalCorpus("distractor", digest, f"distractor:{dataset.path.name}")
    if pool is not None:
        from offline_agent.retrieval import open_corpus

        index = open_corpus(str(pool))  # as text, so that a plain name can also be a saved index's name
        description = f"pool:{pool}"
    else:
        paragraphs = dataset.paragraphs()
        index = paragraph_index(paragraphs)
        description = f"pooled:{dataset.path.name}"
    return EvalCorpus("pooled", index_sha256(index), description, pooled_index=index, passages=len(index))
