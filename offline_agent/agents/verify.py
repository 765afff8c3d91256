"""The verifying agent (`--agent verify`, the default): ReAct whose Final answers are checked before they count.

Why: a small model's wrong answers are mostly well-formed answers written too early: after one search it writes the
first hop's entity, a fact from memory it never read, or an entity the question itself names. Each of these can be
caught without asking the model anything (or with one short call of its own), and each has an obvious next move,
so a refused Final is not the end of the run but an Observation that says why, and the model goes on.

The checks themselves are offline_agent/checks (one module per family, run in order by `CheckPipeline`); this
strategy runs them on each Final, and:
- with `exclude_refused` (and a grounded grammar), takes an answer refused as wrong out of every later step's
  grammar, so the model cannot write it again (a refused "yes" leaves "no"); one refused for want of reading may
  be written again once the run has read more;
- with `search_after_refusal`, lets the step after a refusal that says what to find, and shows no document, only
  search;
- on a step no check sees (the last, which may only answer, or any after the run's last refusal): narrows a
  comparing question's Final to the option whose number wins, where the documents give both numbers
  (checks.pairs.decided), and a question that asks for a number or a date to the spans read that are one
  (AnswerForm.fits), where the run has read any: what the checks refuse on other steps cannot be written there;
- rewrites an answer in the form the question asks for (checks' rewrites: a name part, the date as written, the
  person named, a name in full, the kind with its noun, the unit as written).
It serves the checks as their host (checks.CheckHost): documents they show become the step's tool result, which a
grounded run reads, and their model calls (a one-word judgment, an answer read off one document) are booked on
the step. Everything else is ReAct's loop, grammar, parser and tools; the prompt's worked examples show refusals and
how to go on after one (prompt_files/verify_*.txt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from offline_agent.agents.options import StrategyOptions, VerifyOptions
from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.agents.step_runner import STOP_SEQUENCES, StepRunner, TurnResult
from offline_agent.answer_form import answer_form
from offline_agent.backends.base import aside
from offline_agent.checks import DEFAULT_CHECKS, DEFAULT_REWRITES, MAX_REFUSALS, Candidate, CheckPipeline
from offline_agent.checks.base import refusals_of
from offline_agent.checks.pairs import decided
from offline_agent.checks.pipeline import leaving_out
from offline_agent.checks.reading import refused_first_word
from offline_agent.details import ToolDetails
from offline_agent.grammar import GrammarSpec, StepGrammar, build_grammar
from offline_agent.grounding import Grounding, OptionsGrounding
from offline_agent.normalize import normalize_answer
from offline_agent.parse import StepParser, WordParser, parser_for
from offline_agent.prompts import PromptParts
from offline_agent.steps import Step, StepRecord
from offline_agent.tools.documents import Shown, documents_of

# The longest answer (in grounding's tokens) a step narrowed to the kind asked may write: "April 1, 1949" is four,
# "more than 70 countries" four, "276,170 inhabitants" four.
FITTING_TOKENS = 6


class VerifyAgent(ReActAgent):
    """ReAct whose Finals are checked (offline_agent/checks) before they count."""

    name = "verify"
    prompt_name = "verify"
    options_type = VerifyOptions
    options: VerifyOptions
    # The checks a Final goes through, in order, and the rewrites of an answer; a subclass may list its own.
    checks = DEFAULT_CHECKS
    rewrites = DEFAULT_REWRITES

    @classmethod
    def check_options(cls, options: StrategyOptions) -> None:
        assert isinstance(options, VerifyOptions)
        leaving_out(options.without, cls.checks, cls.rewrites, owner=cls.name)

    def setup(self) -> None:
        super().setup()
        # The checks this strategy's Finals go through; a name in `without` that none of them has is an error here.
        checks, rewrites = leaving_out(self.options.without, self.checks, self.rewrites, owner=self.name)
        self.pipeline = CheckPipeline(checks, rewrites, read_hop=self.options.read_hop)

    # --- the loop's hooks -------------------------------------------------------------------------------------------

    def check_final(self, state: LoopState, record: StepRecord, step: Step, turn: TurnResult) -> str | None:
        assert step.final is not None
        refusal = self.pipeline.review(self.candidate(state, record, step.final, turn))
        if refusal is None:
            return None
        if self.options.exclude_refused and refusal.reason in self.pipeline.excluding and state.grounding is not None:
            state.grounding.exclude(step.final)
        return refusal.observation

    def must_search(self, state: LoopState) -> bool:
        """With search_after_refusal: the step after a refusal that says what to find may only search, unless the
        refusal showed a document (then the next step may answer from it)."""
        steps = state.trajectory.steps
        details = steps[-1].details if steps else None
        if not self.options.search_after_refusal or details is None or details.tool is not None:
            return False
        return details.refusal is not None and details.refusal.reason in self.pipeline.searching

    def step_grammar(self, state: LoopState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        """ReAct's grammar, except on a step that may only answer (the last), which no check sees: there, a
        comparing question whose two numbers the documents give may only be answered with the option that wins."""
        ruled_out = self._decided(state) if final_only and state.grounding is not None else None
        if ruled_out is not None:
            assert state.grounding is not None
            state.grounding.exclude(ruled_out[0])  # in any case the grammar may write it
        return super().step_grammar(state, index, final_only)

    def final_grounding(self, state: LoopState, final_only: bool) -> Grounding | None:
        """What the run has read; but on a step no check sees, a question that wants a number or a date may only be
        answered with a span of at most FITTING_TOKENS tokens that is one ("250 million", not "1978" for "How many
        copies ... sold?"), where the run has read any."""
        grounding, form = state.grounding, state.form
        unchecked = final_only or self.pipeline.unchecked(len(refusals_of(state.trajectory.steps)))
        if grounding is None or form is None or form.wants is None or not unchecked:
            return grounding
        fitting = grounding.spans(form.fits, FITTING_TOKENS)
        return OptionsGrounding(fitting, capitals=False) if fitting else grounding

    def review_step(self, state: LoopState, record: StepRecord, step: Step | None) -> Step | None:
        """Record on a last step whose answer a comparison decided the numbers that decided it, and apply the
        rewrites that come before the checks (a name part of a whole name)."""
        ruled_out = self._decided(state) if record.final_only and state.grounding is not None else None
        if ruled_out is not None and step is not None and step.is_final:
            self.details(record).checked = ruled_out[1]
        if step is not None and step.final is not None:
            written = self.pipeline.rewrite(self.candidate(state, record, step.final), before_checks=True)
            if written != step.final:
                step = replace(step, final=written)
        return super().review_step(state, record, step)

    def final_answer(self, state: LoopState, record: StepRecord, step: Step) -> str:
        """The Final that stands, in the form the question asks for (the rewrites after the checks). The checks weigh
        what the model wrote, so a refused answer is the one taken out of the grammar."""
        answer = super().final_answer(state, record, step)
        return self.pipeline.rewrite(self.candidate(state, record, answer), before_checks=False)

    def _decided(self, state: LoopState) -> tuple[str, dict[str, str]] | None:
        if not self.options.exclude_refused:
            return None
        return decided(state.trajectory.question, documents_of(self.tools))

    # --- the checks' host -------------------------------------------------------------------------------------------

    def candidate(self, state: LoopState, record: StepRecord, answer: str, turn: TurnResult | None = None) -> Candidate:
        """What the checks look at for `answer`, written on the step `record` (not yet in the trajectory)."""
        refusals = refusals_of(state.trajectory.steps)
        given = normalize_answer(answer)
        excluding = self.pipeline.excluding

        def excluded() -> list[str]:
            return [r.answer for r in refusals_of([*state.trajectory.steps, record]) if r.reason in excluding]

        return Candidate(
            question=state.trajectory.question,
            answer=answer,
            form=state.form or answer_form(state.trajectory.question),
            state=state,
            record=record,
            turn=turn,
            host=self,
            documents=documents_of(self.tools),
            refusals=refusals,
            excluded=excluded,
            earlier={r.reason for r in refusals if normalize_answer(r.answer) == given},
            reasons={r.reason for r in refusals},
            exclude_refused=self.options.exclude_refused,
            details_type=self.details_type,
        )

    def show(self, candidate: Candidate, shown: Shown) -> str:
        self.details(candidate.record).tool = ToolDetails.from_dict(shown.details())
        observation = self.fit_observation(shown.text)
        self.read(candidate, observation)
        return observation

    def read(self, candidate: Candidate, text: str) -> None:
        if self.reads(candidate.state):
            assert candidate.state.grounding is not None
            candidate.state.grounding.add(text)

    def fit(self, text: str) -> str:
        return self.fit_observation(text)

    def word(self, candidate: Candidate, system: str, user: str, words: WordParser) -> str | None:
        prompt = self.prompt_prefix(PromptParts(system=system, user=user))
        with aside(self.backend):  # the run's own prompt stays in the cache for its next step
            result = self.runner.word(candidate.state, prompt, words, seed=self.config.seed)
        StepRunner.add_cost(candidate.record, result)
        return result.value

    def read_off(
        self, candidate: Candidate, text: str, system: str, user: str, exclude: Sequence[str] = ()
    ) -> str | None:
        grounding = Grounding([text], yes_no=False)
        for refused in [*candidate.excluded(), *exclude]:
            grounding.exclude(refused)
        if grounding.is_empty:
            return None
        spec = GrammarSpec(thought=False, allow_action=False, grounded=True, abstain=False)
        prompt = self.prompt_prefix(PromptParts(system=system, user=user))
        with aside(self.backend):
            result = self.runner.turn(
                candidate.state,
                prompt,
                build_grammar(spec, grounding),
                parser_for(spec),
                max_tokens=self.config.max_tokens,
                stop=STOP_SEQUENCES,
                seed=self.config.seed,
                stream=False,
                grounding=grounding,
            )
        StepRunner.add_cost(candidate.record, result)
        return result.value.final if result.value is not None and result.value.is_final else None


__all__ = ["MAX_REFUSALS", "VerifyAgent", "refused_first_word"]
