"""The other strategies of the ReAct paper, as settings of the one loop in `react.py` (no hook of their own).

Each differs from ReAct only in what a step may hold and in its prompt files; the grammar comes from the same
builder, so a format-error comparison between strategies measures the strategy, not the plumbing:
- `act`: `Action:` or `Final:` lines without a Thought, calling the same tools step after step;
- `cot`: a single step, one `Thought:` line of reasoning then `Final:`; no tools;
- `standard`: a single step, `Final:` alone; no tools.
"""

from __future__ import annotations

from dataclasses import replace

from offline_agent.agents.base import RunConfig
from offline_agent.agents.react import ReActAgent


class ActAgent(ReActAgent):
    """Actions without Thoughts: the model calls tools until it writes `Final:`."""

    name = "act"
    uses_thought = False
    uses_tools = True
    prompt_name = "act"


class _SingleStepAgent(ReActAgent):
    """A strategy that answers in one model turn: max_steps is always 1, so that turn may only be Final."""

    uses_tools = False
    # Least room a one-turn strategy needs (characters of Thought, tokens per turn); larger settings are kept.
    min_thought_chars = 0
    min_max_tokens = 16

    def bound_config(self, config: RunConfig) -> RunConfig:
        return replace(
            config,
            max_steps=1,
            thought_max=max(config.thought_max, self.min_thought_chars),
            max_tokens=max(config.max_tokens, self.min_max_tokens),
        )


class CoTAgent(_SingleStepAgent):
    """Chain of thought: one Thought line of reasoning, then Final, from the model's own knowledge."""

    name = "cot"
    uses_thought = True
    prompt_name = "cot"
    # One line of reasoning over two hops needs more than a ReAct thought's 300 characters.
    min_thought_chars = 600
    min_max_tokens = 320


class StandardAgent(_SingleStepAgent):
    """Answer directly: one `Final:` line, no reasoning, no tools."""

    name = "standard"
    uses_thought = False
    prompt_name = "standard"


__all__ = ["ActAgent", "CoTAgent", "StandardAgent"]
