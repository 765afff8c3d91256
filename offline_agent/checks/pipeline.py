"""The order the checks of a Final run in, and the rules of a run around them.

`CheckPipeline.review` runs the checks in their order and stops at the first refusal; `rewrite` applies the
rewrites of one stage. The rules around the checks:
- a run refuses at most `max_refusals` Finals; after that, and on a step that may only answer (which no check
  sees), a Final stands as written;
- an answer refused before and written again after the Observation that refused it stands, but a yes/no or choice
  answer is still weighed, once a run, by the checks that weigh it (`weighs`), and an open question's answer
  refused only as unread is still judged by the checks of its own words: it was never weighed;
- a refusal whose check asks for it (`Refusal.show_document`) also shows the refused answer's own document, as a
  search shows it: the answer was the entity on the way, and its document most often says what the question asks
  about it; with `read_hop`, the model also answers the question from that document alone, in a call of its own
  under a grammar of the document's spans, and the refusal ends with that answer and its sentence (unless it
  repeats the question or is not of the kind asked for); so too for a document on the way that a refusal showed
  itself (`Refusal.hop`: the entry of the thing "that NOUN" refers to).
"""

from __future__ import annotations

from collections.abc import Sequence

from offline_agent.checks.base import (
    CLOSED,
    EVERY_FORM,
    OPEN,
    AnswerRewrite,
    Candidate,
    FinalCheck,
    Refusal,
    sentence_with,
)
from offline_agent.checks.dates import Event, WholeDate
from offline_agent.checks.kinds import AsksFor, Described, Kind, TypeNoun, about_a_place, texts
from offline_agent.checks.names import FullName, NamePartCut, Owner
from offline_agent.checks.pairs import Compare, Same, Shared, Sides
from offline_agent.checks.quantities import Unit
from offline_agent.checks.reading import OneSide, Unread
from offline_agent.checks.referents import Referent, Referred
from offline_agent.checks.wording import InQuestion, in_question
from offline_agent.details import RefusalDetails
from offline_agent.errors import ConfigError
from offline_agent.tools.titles import bare_title

MAX_REFUSALS = 3

# The checks in the order they run. A yes/no or choice answer meets unread, one_side, compare, sides and same; an
# open one meets unread and the rest. Cheap checks of the answer's own words come before those that open documents.
DEFAULT_CHECKS: tuple[FinalCheck, ...] = (
    Unread(),
    OneSide(),
    Compare(),
    Sides(),
    Same(),
    InQuestion(),
    Referent(),
    Referred(),
    Kind(),
    Event(),
    Shared(),
    AsksFor(),
    Described(),
)
# The rewrites: the name part before the checks; after them, the first of the others that applies.
DEFAULT_REWRITES: tuple[AnswerRewrite, ...] = (NamePartCut(), WholeDate(), Owner(), FullName(), TypeNoun(), Unit())


def key_of(name: str) -> str:
    """How `-o without=` names a check or a rewrite: its name, with _ for a space ("person_named")."""
    return name.replace(" ", "_")


def check_keys(
    checks: Sequence[FinalCheck] = DEFAULT_CHECKS, rewrites: Sequence[AnswerRewrite] = DEFAULT_REWRITES
) -> tuple[str, ...]:
    """The keys of the checks and then of the rewrites, in their order."""
    return tuple(key_of(item.name) for item in (*checks, *rewrites))


def checks_table(
    checks: Sequence[FinalCheck] = DEFAULT_CHECKS, rewrites: Sequence[AnswerRewrite] = DEFAULT_REWRITES
) -> str:
    """The checks and then the rewrites, in their order, as a Markdown table: each one's `-o without=` key, what it
    is, the answers it looks at, what becomes of an answer it refuses, and its module. checks/__init__.py's
    docstring ends with it and docs/answers.md holds it (a test keeps the two equal), so neither restates the list
    by hand."""
    rows = ["| # | key | what | answers | a refused answer (exclude_refused) | module |", "|---:|---|---|---|---|---|"]
    for check in checks:
        forms = _FORMS.get(check.forms, ", ".join(sorted(check.forms)))
        refused = "excluded" if check.excludes else "may be written again"
        rows.append(_row(len(rows) - 1, check, "check", forms, refused))
    for rewrite in rewrites:
        stage = "before" if rewrite.before_checks else "after"
        rows.append(_row(len(rows) - 1, rewrite, f"rewrite, {stage} the checks", "", ""))
    return "\n".join(rows)


def _row(number: int, item: FinalCheck | AnswerRewrite, *cells: str) -> str:
    module = type(item).__module__.removeprefix("offline_agent.checks.")
    return " | ".join([f"| {number}", f"`{key_of(item.name)}`", *cells, f"{module} |"])


_FORMS = {OPEN: "open", CLOSED: "yes/no, choice", EVERY_FORM: "every form"}


def split_keys(without: str) -> list[str]:
    """The names of a comma-separated list (`-o without=sides,same`)."""
    return [name.strip() for name in without.split(",") if name.strip()]


def leaving_out(
    without: str, checks: Sequence[FinalCheck], rewrites: Sequence[AnswerRewrite], *, owner: str = "verify"
) -> tuple[tuple[FinalCheck, ...], tuple[AnswerRewrite, ...]]:
    """`checks` and `rewrites` without those `without` names (comma-separated keys, as `key_of` writes them); a
    name none of them has is a ConfigError that lists theirs (`owner` is the strategy that reads the option)."""
    names = set(split_keys(without))
    keys = check_keys(checks, rewrites)
    unknown = [name for name in split_keys(without) if name not in keys]
    if unknown:
        raise ConfigError(
            f"option without of strategy {owner}: no check or rewrite named {', '.join(unknown)}; "
            f"choose from {', '.join(keys)}"
        )
    return (
        tuple(check for check in checks if key_of(check.name) not in names),
        tuple(rewrite for rewrite in rewrites if key_of(rewrite.name) not in names),
    )


class CheckPipeline:
    """Ordered checks and rewrites, with the run's limit on refusals and whether a hop's document is read alone."""

    def __init__(
        self,
        checks: Sequence[FinalCheck] = DEFAULT_CHECKS,
        rewrites: Sequence[AnswerRewrite] = DEFAULT_REWRITES,
        *,
        max_refusals: int = MAX_REFUSALS,
        read_hop: bool = False,
    ) -> None:
        self.checks = tuple(checks)
        self.rewrites = tuple(rewrites)
        self.max_refusals = max_refusals
        self.read_hop = read_hop

    @property
    def excluding(self) -> frozenset[str]:
        """The reasons of checks that refuse an answer as wrong in itself (excluded from later grammars)."""
        return frozenset(check.name for check in self.checks if check.excludes)

    @property
    def searching(self) -> frozenset[str]:
        """The reasons of checks whose Observation says what to find and shows no document."""
        return frozenset(check.name for check in self.checks if check.says_search)

    def unchecked(self, refusals: int) -> bool:
        """Whether a run that has refused `refusals` Finals checks no more."""
        return refusals >= self.max_refusals

    def review(self, candidate: Candidate) -> Refusal | None:
        """The first refusal of the candidate's answer (recorded on its step), or None when it stands."""
        if self.unchecked(len(candidate.refusals)):
            return None
        is_open = candidate.form.kind == "open"
        checks = self.checks
        if candidate.earlier and (not is_open or candidate.earlier != {"unread"}):
            if is_open:
                return None
            checks = tuple(check for check in checks if check.weighs)
        for check in checks:
            if candidate.form.kind not in check.forms or (check.weighs and check.name in candidate.reasons):
                continue
            refusal = check.refuse(candidate)
            if refusal is None:
                continue
            candidate.details.refusal = RefusalDetails(refusal.reason, candidate.answer)
            if refusal.show_document:
                return Refusal(refusal.reason, self._with_document(candidate, refusal.observation))
            if refusal.hop is not None and self.read_hop:
                read = self._read_alone(candidate, *refusal.hop)
                return Refusal(refusal.reason, "\n".join([refusal.observation, *([read] if read else [])]))
            return refusal
        return None

    def rewrite(self, candidate: Candidate, *, before_checks: bool) -> str:
        """The answer after the first rewrite of the stage that applies (recorded on the step as `checked`)."""
        for rewrite in self.rewrites:
            if rewrite.before_checks != before_checks:
                continue
            done = rewrite.rewrite(candidate)
            if done is None:
                continue
            how, written = done
            if written is None:
                break
            candidate.details.checked = {candidate.answer: f"{how}: {written}"}
            return written
        return candidate.answer

    def _with_document(self, candidate: Candidate, refusal: str) -> str:
        """`refusal` with the refused answer's own document shown (and, with read_hop, read alone)."""
        place = about_a_place(candidate.form)
        shown = candidate.open("open_named", candidate.answer, exclude_seen=False, place=place)
        if shown is None:
            return refusal
        own = candidate.own_document(place) if self.read_hop else None
        read = None
        if own is not None:
            read = self._read_alone(candidate, candidate.answer, candidate.host.fit(own), candidate.question)
        return "\n".join([refusal, texts()["document"].format(text=shown.text), *([read] if read else [])])

    def _read_alone(self, candidate: Candidate, name: str, text: str, question: str) -> str | None:
        """The model's answer to `question` from one document on the way alone (`name`'s: the refused answer's own,
        or one a refusal showed), and the sentence it is in, which the run reads; None where the call gave no
        answer, or one the first checks would refuse."""
        if not candidate.grounded:
            return None
        host = candidate.host
        user = texts()["read_user"].format(title=name, text=text, question=question, name=bare_title(name))
        system = texts()["read_system"]
        found = host.read_off(candidate, text, system, user)
        if found and _repeats(found, question, candidate.question):
            # The model copied the words the document's sentence opens with, which are the question's ("The
            # default" of "The default is 8." for "What is max_worker_processes's default?"): asked once more
            # without them, it reads on to what the sentence says.
            found = host.read_off(candidate, text, system, user, exclude=(found,))
        if not found or _repeats(found, question, candidate.question):
            return None
        if not candidate.form.fits(found):
            return None
        sentence = sentence_with(text, found)
        host.read(candidate, sentence)
        return texts()["read"].format(found=found, sentence=sentence)


def _repeats(found: str, *questions: str) -> bool:
    """Whether an answer read off a document repeats the words of one of `questions`."""
    return any(in_question(found, question) for question in questions)
