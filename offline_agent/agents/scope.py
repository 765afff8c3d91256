"""Knowing when not to answer: a question outside what the corpus is about gets a short refusal, not a search.

Why: a search over the user's files always returns something, and a small model will build an answer from
whatever comes back ("What is the capital of Peru?" over a corpus of company memos). With a scope (a sentence or
two saying what the documents are about: `--scope TEXT_OR_FILE`, or stored with an index by `index --scope`),
each question is checked before the first step:

1. a rule: the question's terms (the index's analyzer: stopwords out) against the index's vocabulary. None of them
   in it, or fewer than KNOWN_TOO_FEW of them and no passage that holds two: out of scope, without asking the
   model (a question mostly in words the documents never use, whose known words never meet in one passage, is
   not about them: "How do I reset the password of my home wifi router?" over encyclopedia articles knows only
   "home"). At least MATCHED_ENOUGH of them, and a passage that holds at least two: in scope, without asking the
   model either.
2. otherwise one cheap grammar-constrained model call: the scope, the question, "yes" or "no".

Out of scope: the run stops before any search with stop reason `out_of_scope` and a refusal that names the scope
as its answer. The check (rule or call, its text and cost) is the run's first step, its `details.scope`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent import incoming
from offline_agent.details import ScopeDetails, StepDetails
from offline_agent.errors import ConfigError
from offline_agent.steps import StepRecord, Timings, Usage

MATCHED_ENOUGH = 0.75  # share of the question's terms the corpus must know for the rule to say "in scope"
KNOWN_TOO_FEW = 0.5  # below this share, with no passage holding two of them, the rule says "out of scope"
SCOPE_MAX = 2000
REFUSAL = "This question is outside what these documents cover ({scope}), so I will not answer it."
_GRAMMAR = 'root ::= "yes" | "no"\n'
_SYSTEM = "You decide whether a collection of documents could answer a question. Reply with yes or no only."
_USER = (
    "The documents are about: {scope}\n\nQuestion: {question}\n\n"
    "Could documents about that topic answer this question? Reply yes or no."
)


def read_scope(text_or_file: str | None) -> str | None:
    """The scope text: `text_or_file` itself, or the contents of the file it names; None for nothing."""
    if text_or_file is None or not text_or_file.strip():
        return None
    path = Path(text_or_file).expanduser()
    short = len(text_or_file) < 4096 and "\n" not in text_or_file
    try:
        is_file = short and path.is_file()
    except OSError:
        is_file = False
    kind = incoming.not_a_file(path) if short else None
    if kind is not None:
        raise ConfigError(f"the scope file {path} is {kind}, not a file")
    if not is_file and _looks_like_a_path(text_or_file):
        raise ConfigError(
            f"scope file not found: {text_or_file} (give --scope a sentence saying what the documents are about, or "
            "the path of a file that holds one)"
        )
    if is_file:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"cannot read the scope file {path}: {exc.strerror or exc}") from None
    else:
        text = text_or_file
    text = " ".join(text.split())
    if not text:
        raise ConfigError(f"the scope file {path} is empty")
    return text[:SCOPE_MAX]


def _looks_like_a_path(text: str) -> bool:
    """One word with a folder in it, a home or relative start, or a text file's suffix: meant as a file, not as
    the scope itself ("/typo/path", "~/scope.txt", "notes.md"; not "medicine and surgery")."""
    text = text.strip()
    if any(char.isspace() for char in text):
        return False
    return "/" in text or text.startswith(("~", ".")) or Path(text).suffix.lower() in (".txt", ".md", ".rst")


@dataclass
class ScopeVerdict:
    """Whether a question is in scope, how that was decided ("rule" or "model"), and the step that records it."""

    in_scope: bool
    decided_by: str
    record: StepRecord


def check_scope(question: str, scope: str, index: Any, backend: Any, *, seed: int = 0) -> ScopeVerdict:
    """Decide whether `question` is about `scope` (see the module doc)."""
    started = time.monotonic()
    rule = _rule(question, index)
    details = ScopeDetails(scope=scope, rule=rule)
    record = StepRecord(index=0, raw="", details=StepDetails(scope=details))
    if rule["verdict"] is not None:
        record.seconds = round(time.monotonic() - started, 3)
        details.decided_by = "rule"
        return ScopeVerdict(rule["verdict"], "rule", record)
    from offline_agent.prompts import render_chat

    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": _USER.format(scope=scope, question=question.strip())},
    ]
    prompt = render_chat(backend.chat_template, messages, bos_token=backend.bos_token, eos_token=backend.eos_token)
    completion = backend.complete(prompt, grammar=_GRAMMAR, max_tokens=4, temperature=0.0, seed=seed)
    answer = completion.text.strip().lower()
    record.raw = completion.text
    record.usage = completion.usage or Usage()
    record.timings = completion.timings or Timings()
    record.seconds = round(time.monotonic() - started, 3)
    details.decided_by, details.reply = "model", answer
    # Anything but a clear "no" (a backend without a grammar may write more) keeps the question: refusing a
    # question the corpus covers costs more than searching for one it does not.
    return ScopeVerdict(not answer.startswith("no"), "model", record)


def refusal(scope: str) -> str:
    """The Final of a refused question: short, and naming what the documents are about."""
    head = scope.split(". ")[0].rstrip(".")
    if len(head) > 120:
        head = head[:117].rsplit(" ", 1)[0] + "..."
    return REFUSAL.format(scope=head)


def _rule(question: str, index: Any) -> dict[str, Any]:
    """The vocabulary rule: verdict True/False when it is sure, None when the model should decide."""
    analyzer = getattr(index, "analyzer", None)
    if index is None or analyzer is None:
        return {"verdict": None, "terms": 0, "known": 0}
    terms = sorted(set(analyzer.tokens(question)))
    known = [term for term in terms if index.search_ids([term], k=1)[0].size]
    out: dict[str, Any] = {"terms": len(terms), "known": len(known), "verdict": None}
    if not terms:
        return out
    if not known:
        out["verdict"] = False
        return out
    best = index.search_tokens(known, k=1)
    if best.ids.size:
        passage_terms = set(analyzer.tokens(best.passages[0].text + " " + best.passages[0].title))
        out["best_overlap"] = len(passage_terms & set(known))
    together = out.get("best_overlap", 0) >= 2
    if len(known) < KNOWN_TOO_FEW * len(terms) and not together:
        out["verdict"] = False
    elif len(known) >= MATCHED_ENOUGH * len(terms) and together:
        out["verdict"] = True
    return out


__all__ = ["KNOWN_TOO_FEW", "MATCHED_ENOUGH", "ScopeVerdict", "check_scope", "read_scope", "refusal"]
