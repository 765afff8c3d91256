"""Whether what the run read supports its answer: the check that turns a Final into "the documents do not say".

Why: a grounded Final is a span of something read, so a run always finds one, even where the documents hold no
answer at all (a setting the version lacks, a false premise, a topic not covered): the 1.5B model then copies the
nearest span ("max_parallel_maintenance_workers" for a question about max_parallel_vacuum_workers). A check that
refuses and lets the run search on cannot help there, since no search can find what is not written; this one
makes the run abstain instead. Two tests, both about the question and what was read, not about the question's
wording:
- `named`: a name the question writes as a technical identifier (with an underscore inside, a dot and lower-case
  letters, lower-case letters then digits, an option `--name`, a call `name()`) that is in no Observation of the
  run, nor in what a search of the corpus for the name itself shows (where the run has a document source): the
  documents never mention what the question is about. The search keeps a name that the run's snippets left out
  (a sentence snippet shows the sentences best for the run's own query) from counting as unread.
- `judged`: the model itself, in a call of its own under a yes/no grammar, reads the sentences read that hold the
  answer and says whether they answer this question, about the same thing it names; "no" is unsupported.

Looked at only for open answers (a yes/no or a choice between named options is weighed by verify's checks), and
only where some sentence read holds the answer (an answer taken from the question has nothing to judge). Limits:
the judge is the run's own small model, and it says "no" to some sentences that do answer (measured on the
development corpora, docs/answers.md); the identifiers test knows only names written as identifiers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from offline_agent.parse import WordParser
from offline_agent.prompts import prompt_table
from offline_agent.retrieval.sentences import split_sentences

YES_OR_NO = WordParser(("yes", "no"))
MOST_SENTENCES = 3  # the sentences the judge reads: the first that hold the answer
SENTENCE_MAX = 400  # characters of each, so the judge's prompt stays short
# A technical identifier: a word with _ inside it, or a dot and lower-case letters (postgresql.conf, not U.S.), or
# lower-case letters then digits (sha256), an option (--jobs, -e), a call (now()).
_IDENTIFIER = re.compile(
    r"(?<![\w-])(--?[a-z][\w-]*|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+|\.[a-z][a-z0-9]+)+|[a-z]+\d+[a-z\d]*"
    r"|[A-Za-z_]\w*\(\))(?![\w-])"
)

# Asks the judge for one word: "yes" or "no".
Ask = Callable[[str, str, WordParser], "str | None"]
# What a search of the corpus for a name shows ("" where nothing).
Find = Callable[[str], str]


@dataclass(frozen=True)
class SupportVerdict:
    """Whether the answer stands, and why not: `named` (an identifier of the question read nowhere) or `judged`
    (the model said the sentences do not answer); `detail` is the identifier, or the sentences judged."""

    supported: bool
    reason: str = ""
    detail: str = ""


def identifiers(question: str) -> list[str]:
    """The names the question writes as technical identifiers, in order (a trailing full stop is not part)."""
    found = [match.rstrip(".") for match in _IDENTIFIER.findall(question)]
    return list(dict.fromkeys(name for name in found if name))


def unread_names(question: str, read: str) -> list[str]:
    """The question's identifiers that are not in `read` (case aside; a call's `()` aside)."""
    text = read.casefold()
    return [name for name in identifiers(question) if name.casefold().removesuffix("()") not in text]


def sentences_holding(answer: str, texts: Sequence[str], most: int = MOST_SENTENCES) -> list[str]:
    """The first `most` sentences of `texts` that hold `answer` as whole words, case aside, each cut to
    SENTENCE_MAX characters around the answer."""
    holds = re.compile(rf"(?<!\w){re.escape(answer.strip())}(?!\w)", re.IGNORECASE)
    out: list[str] = []
    for text in texts:
        for excerpt in text.split(" ... "):
            for start, end in split_sentences(excerpt):
                sentence = " ".join(excerpt[start:end].split())
                found = holds.search(sentence)
                if found and sentence not in out:
                    at = max(0, found.start() - SENTENCE_MAX // 2)
                    out.append(sentence[at : at + SENTENCE_MAX])
                    if len(out) >= most:
                        return out
    return out


def judge_prompt(
    question: str, answer: str, sentences: Sequence[str], texts: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The judge's system and user messages, from `texts` (`system`, and `user` with {question}, {answer} and
    {sentences}; default: the `[support]` table of answer_checks.toml)."""
    texts = texts or prompt_table("answer_checks.toml", "support")
    quoted = "\n".join(f"- {sentence}" for sentence in sentences)
    return texts["system"], texts["user"].format(question=question, answer=answer, sentences=quoted)


class Support:
    """The support check of a Final (see the module's docstring)."""

    name = "support"

    def verdict(
        self, question: str, answer: str, read: Sequence[str], ask: Ask, find: Find | None = None
    ) -> SupportVerdict:
        """Whether `answer` to `question` is supported by the Observations `read`; `ask` puts a yes/no question
        to the model (system, user, parser) and returns its word, or None where it gave none (which stands);
        `find` shows what a search of the corpus for a name finds (None: no search)."""
        unread = unread_names(question, "\n".join(read))
        if find is not None:
            unread = [name for name in unread if unread_names(name, find(name.removesuffix("()")))]
        if unread:
            return SupportVerdict(False, "named", unread[0])
        sentences = sentences_holding(answer, read)
        if not sentences:
            return SupportVerdict(True)
        system, user = judge_prompt(question, answer, sentences)
        word = ask(system, user, YES_OR_NO)
        if word == "no":
            return SupportVerdict(False, "judged", " | ".join(sentences))
        return SupportVerdict(True)


__all__ = ["Support", "SupportVerdict", "identifiers", "judge_prompt", "sentences_holding", "unread_names"]
