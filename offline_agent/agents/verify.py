"""The verifying agent (`--agent verify`, the default): ReAct whose Final answers are checked before they count.

Why: on HotpotQA a 1.5B model's wrong answers are mostly well-formed answers written too early. After one search it
writes the first hop's entity ("Shirley Temple" for "What government position was held by the woman who
portrayed Corliss Archer?"), a fact from memory it never read ("1961"), or an entity the question itself names.
Each of these can be caught without asking the model anything, and each has an obvious next move, so a refused
Final is not the end of the run but an Observation that says why, and the model goes on:

- `unread`: under a grounded grammar, the grammar refused the model's first word of the answer: what it meant
  to write is nowhere in what the run has read. Observation: search for the fact that is missing.
- `in_question`: an open question's answer repeats words of the question ("Gator Country"), which names the
  first hop, not the answer. Observation: find what the question asks about it.
- `kind`: an open question that asks for a year, a date or a number gets an answer with no digit or number word
  in it ("Kansas" for "a population of how many inhabitants?", answer_form.py). Observation: what the question
  asks for.
- `asks_for`: a "which/what NOUN" question ("Which river flows through the birth city of James Joyce?") is
  answered with the title of a document whose first sentence does not say it is one ("Dublin": "Dublin is the
  capital and largest city of Ireland"): the answer is a hop on the way, not the thing asked for. Observation:
  that sentence and what the question asks for.
- `one_side`: a yes/no or "A or B" question names documents the run has not read ("Are the Laleli Mosque and
  Esma Sultan Mansion in the same neighborhood?" answered after reading only the mosque): a comparison judged from
  one side is a guess. The Observation is those documents, so the model reads the other side before answering.
- `unopened`: the answer is the title of a document the run has not read (its title, a qualifier such as
  "(1945 film)" aside, is the answer as written): the model names a hop it has not made. The Observation is that
  document, so the model reads it before answering again (an answer that really is that entity is then
  accepted, one search later).

A run refuses at most MAX_REFUSALS Finals; after that, and always on the last step (which may only answer), a
Final counts as written. Everything else is ReAct's loop, grammar, parser and tools; the prompt's worked examples
show refusals and how to go on after one (prompt_files/verify_*.txt).
"""

from __future__ import annotations

from collections.abc import Sequence

from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.agents.step_runner import TurnResult
from offline_agent.answer_form import AnswerForm, answer_form, in_question
from offline_agent.details import RefusalDetails, Rejection, ToolDetails
from offline_agent.steps import Step, StepRecord

MAX_REFUSALS = 3
FINAL = "Final: "

UNREAD = "Your answer is not in anything you have read. Search for the fact you still need. The question: {question}"
IN_QUESTION = "{answer} is named in the question, so it is not the answer. Find what the question asks: {question}"
KIND = "The question asks for {wants}, and {answer} is not one. Find it: {question}"
WANTS = {"date": "a year or a date", "number": "a number"}
UNOPENED = "{title} has a document of its own that you have not read:\n{text}\nNow answer the question: {question}"
ASKS_FOR = "{answer} is not what the question asks for ({kind}): {definition}\nFind it: {question}"
ONE_SIDE = "The question also names {titles}, which you have not read:\n{text}\nNow answer the question: {question}"


class VerifyAgent(ReActAgent):
    """ReAct whose Finals are checked (unread, in the question, kind, asks for, one side, unopened) first."""

    name = "verify"
    prompt_name = "verify"

    def check_final(self, state: LoopState, record: StepRecord, step: Step, turn: TurnResult) -> str | None:
        assert step.final is not None
        from offline_agent.eval.metrics import normalize_answer

        refusals = [s.details.refusal for s in state.trajectory.steps if s.details is not None and s.details.refusal]
        answer = step.final
        # A model that writes a refused answer again, after the Observation that refused it, keeps it.
        if len(refusals) >= MAX_REFUSALS or normalize_answer(answer) in {normalize_answer(r.answer) for r in refusals}:
            return None
        question = state.trajectory.question
        form = state.form or answer_form(question)
        if state.grounding is not None and refused_first_word(record.raw, turn.last_rejections):
            return self._refuse(record, "unread", answer, UNREAD.format(question=question))
        if form.kind != "open":
            return self._one_side(state, record, answer)
        if in_question(answer, question):
            return self._refuse(record, "in_question", answer, IN_QUESTION.format(answer=answer, question=question))
        if not form.fits(answer):
            assert form.wants is not None
            text = KIND.format(wants=WANTS[form.wants], answer=answer, question=question)
            return self._refuse(record, "kind", answer, text)
        return self._unopened(state, record, answer) or self._asks_for(form, record, answer)

    def _search_tool(self) -> object | None:
        """The run's search tool, whose document lookups (definition, open_named, open_mentioned) the checks use."""
        return self.tools.get("search") if "search" in self.tools else None

    def _refuse(self, record: StepRecord, reason: str, answer: str, observation: str) -> str:
        self.details(record).refusal = RefusalDetails(reason, answer)
        return observation

    def _asks_for(self, form: AnswerForm, record: StepRecord, answer: str) -> str | None:
        """The `asks_for` check: refuse an answer that is the title of a document whose first sentence does not
        name the kind of thing the question asks for (through the search tool's `definition`)."""
        definition = getattr(self._search_tool(), "definition", None)
        if not form.asks_for or definition is None:
            return None
        sentence = definition(answer)
        if sentence is None or form.describes(sentence):
            return None
        text = ASKS_FOR.format(kind=" ".join(form.asks_for), answer=answer, definition=sentence, question=form.question)
        return self._refuse(record, "asks_for", answer, text)

    def _unopened(self, state: LoopState, record: StepRecord, answer: str) -> str | None:
        """The `unopened` check: refuse an answer that is the title of a document the run has not read, and show
        that document (through the search tool's `open_named`; a search tool without it skips the check)."""
        shown = self._open(state, record, "open_named", answer)
        if shown is None:
            return None
        observation, titles = shown
        text = UNOPENED.format(
            title=titles[0] if titles else answer, text=observation, question=state.trajectory.question
        )
        return self._refuse(record, "unopened", answer, text)

    def _one_side(self, state: LoopState, record: StepRecord, answer: str) -> str | None:
        """The `one_side` check: refuse the answer to a yes/no or choice question that names documents the run has
        not read, and show them (through the search tool's `open_mentioned`)."""
        question = state.trajectory.question
        shown = self._open(state, record, "open_mentioned", question)
        if shown is None:
            return None
        observation, titles = shown
        text = ONE_SIDE.format(titles=" and ".join(titles), text=observation, question=question)
        return self._refuse(record, "one_side", answer, text)

    def _open(self, state: LoopState, record: StepRecord, how: str, text: str) -> tuple[str, list[str]] | None:
        """Show the documents the search tool's `how` (open_named or open_mentioned) finds for `text` that the run
        has not read, as this step's tool result: (the Observation, their titles), or None where there are none or
        the search tool cannot open documents. A grounded run reads the Observation."""
        tool = self._search_tool()
        opener = getattr(tool, how, None)
        if opener is None:
            return None
        seen = {
            title for step in state.trajectory.steps if step.details is not None for title in step.details.seen_titles
        }
        shown = opener(text, exclude=seen)
        reported = ToolDetails.from_dict(getattr(tool, "last_details", None))
        if shown is None or reported is None:
            return None
        self.details(record).tool = reported
        observation = self.fit_observation(shown)
        if self.reads(state):
            assert state.grounding is not None
            state.grounding.add(observation)
        return observation, list(reported.titles)


def refused_first_word(raw: str, rejections: Sequence[Rejection]) -> bool:
    """True if the grammar refused the model's choice at the start of the Final's answer (before the end of its
    first word): the answer the model meant is not among what the grammar allowed."""
    start = raw.find(FINAL)
    if start < 0:
        return False
    answer_start = start + len(FINAL)
    rest = raw[answer_start:]
    first_word = len(rest.split()[0]) if rest.split() else 0
    # A refused token may begin at the space before the answer (" 1961" after "Final:").
    return any(answer_start - 1 <= offset < answer_start + max(first_word, 1) for offset, _ in rejections)


__all__ = ["MAX_REFUSALS", "VerifyAgent", "refused_first_word"]
