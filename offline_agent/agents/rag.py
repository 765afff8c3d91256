"""Plain retrieval as a strategy: one search for the whole question, then one model call that answers.

It is the simplest thing a user of a retrieval library builds, and so the baseline every answer figure of this
project stands beside (docs/strategies.md): an agent step that does not beat it does not earn its tokens. It is
also the fast mode, one model call a question.

The run is two steps of react's loop (react.py) with no choice in the first:
- step 0, written by the agent: `search[the question]` (react's opening action), whose Observation shows the top
  passages (5 by default, each its first 600 characters);
- step 1, the model's only turn, may only be `Final:` (early stopping "generate"), under the same grammar as every
  strategy; with `grounded` (the `answer` profile) the Final is a span of the question or of those passages, in the
  form the question asks for (yes/no, one of "A or B").
The answer's sources are the passages of that one search, as for any run. What a search shows is the strategy's
own (its options' defaults); a profile chooses only whether the Final is grounded, takes the form asked and is
checked for support (`profile_options`), so `--agent rag` under the default profile is still plain retrieval.
`-o` changes either.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from offline_agent.agents.options import StrategyOptions, option
from offline_agent.agents.react import LoopState, ReActAgent, question_search
from offline_agent.agents.run import RunConfig
from offline_agent.grammar import StepGrammar
from offline_agent.parse import StepParser
from offline_agent.steps import Action


@dataclass(frozen=True)
class RagOptions(StrategyOptions):
    """What the one search shows: the top 5 passages, each its first 600 characters, uncut."""

    search_k: int = option(5, "Passages the one search shows.", low=1, high=20)
    observation_tokens: int = option(
        1024, "The passages are cut past this many tokens, at a word (marked with ...).", low=16, high=4096
    )


class RagAgent(ReActAgent):
    """Search the question, read the top passages, answer once."""

    name = "rag"
    prompt_name = "rag"
    uses_thought = False
    uses_tools = True
    required_tools = ("search",)
    options_type: ClassVar[type[StrategyOptions]] = RagOptions
    options: RagOptions  # type: ignore[assignment]
    profile_options = frozenset({"grounded", "answer_form", "support_check"})

    @property
    def grammar_sha256(self) -> str:
        """The hash of the one grammar the model writes under (the search step is the agent's)."""
        return self.final_grammar.sha256

    @property
    def spans_only(self) -> bool:
        """Never: the one search is the agent's own, and rag's options have no search_spans."""
        return False

    def bound_config(self, config: RunConfig) -> RunConfig:
        """Two steps, the second of which may only answer."""
        return replace(config, max_steps=2, early_stopping="generate")

    def opening_action(self, state: LoopState) -> Action | None:
        """search[the question], written by the agent (brackets in the question become parentheses)."""
        return question_search(state.trajectory.question) if "search" in self.tools else None

    def step_grammar(self, state: LoopState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        """Every step the model writes may only be Final: grounded in what the search showed, where grounded (the
        question's own words and the form's answers when the search found nothing)."""
        return self.final_step_grammar(state)


__all__ = ["RagAgent", "RagOptions"]
