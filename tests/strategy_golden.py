"""Recorded runs of every strategy, to show that a refactor of the agents changes nothing they do.

Two recordings live in tests/golden/strategies/:
- `scripted.json`: fixed scenarios per strategy on the scripted backend over the tiny corpus (happy paths, retries,
  parse errors, time-outs, context overflow, chat history, grammar off): for each run the normalised trajectory,
  every backend call (hashes of the prompt and grammar, the settings, the prompt's tail) and the callback events;
- `smollm.json`: real runs of the small test model (temperature 0, the sample corpus, three questions per strategy):
  every backend call with the completion the model returned (text, finish reason, usage, grammar rejections), the
  token counts the agent asked for, and the normalised trajectory. A test replays these completions through
  `ReplayBackend` and checks that the agent sends the same prompts and grammars and builds the same trajectory;
  another reruns the model and compares the step texts (see that test's note on numerics).

"Normalised" drops what differs between two runs of the same thing: seconds, timings, the start time, the version,
and how long a grounded step's grammar took to build; and the fields trajectories gained after these were recorded:
the strategy's options and their profile (tests/test_options.py checks what they record), and `abstained` where it
is false. A scenario's
settings are flat (run config and options together), read as `agent_settings(agent, "plain", **settings)`. Calls
to the backend's `warm` (the shared prompt start) are recorded with the calls, as {"warm": hash}.

Record again (only when a change of behaviour is intended, and say so in the commit):
    nice -n 19 .venv/bin/python tests/strategy_golden.py record [scripted|smollm]
Record only the real runs smollm.json lacks (a new strategy or setting), keeping the recorded ones as they are:
    nice -n 19 .venv/bin/python tests/strategy_golden.py extend smollm
Compare the current code against the recordings, printing the first differences:
    nice -n 19 .venv/bin/python tests/strategy_golden.py check [scripted|smollm]
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GOLDEN = HERE / "golden" / "strategies"
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from support import TINY_CORPUS  # noqa: E402  (tests/ is this script's folder, first on sys.path)

from offline_agent.agents import (  # noqa: E402
    AgentCallbacks,
    AgentSettings,
    RunConfig,
    agent_class,
    agent_settings,
    option_infos,
    profile_named,
)
from offline_agent.backends import ScriptedBackend  # noqa: E402
from offline_agent.backends.base import gbnf_of  # noqa: E402
from offline_agent.errors import ContextOverflowError  # noqa: E402
from offline_agent.runner import Session, agent_tools  # noqa: E402
from offline_agent.steps import Completion, Trajectory, Turn, Usage  # noqa: E402
from offline_agent.tools import build_tools  # noqa: E402

STRATEGIES = ("react", "act", "cot", "standard", "knowagent", "critic", "plan", "verify", "rag")


def sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def grammar_sha(grammar: Any) -> str | None:
    return None if grammar is None else sha(gbnf_of(grammar))


def normalise(trajectory: Trajectory) -> dict[str, Any]:
    """The trajectory's JSON form without what two runs of the same thing do not share."""
    data = json.loads(trajectory.to_json())
    for key in ("seconds", "started_at", "version", "options", "profile"):
        data.pop(key, None)
    if data.get("abstained") is False:  # gained after the recordings; a run that abstained keeps it
        data.pop("abstained")
    for step in data["steps"]:
        step.pop("seconds", None)
        step.pop("timings", None)
        grounding = (step.get("details") or {}).get("grounding")
        if isinstance(grounding, dict):
            grounding.pop("build_s", None)
    for sample in data.get("samples") or ():
        sample.pop("seconds", None)
    if data.get("scope"):
        data["scope"].pop("seconds", None)
    return data


# --- backends that record and replay --------------------------------------------------------------------------------


class OverflowingScripted(ScriptedBackend):
    """The scripted backend, where a queued exception is raised by the call that takes it."""

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        if self._queue and isinstance(self._queue[0], BaseException):
            from offline_agent.backends.scripted import ScriptedCall

            self.calls.append(
                ScriptedCall(
                    prompt,
                    None if kwargs.get("grammar") is None else gbnf_of(kwargs["grammar"]),
                    kwargs.get("max_tokens", 256),
                    tuple(kwargs.get("stop", ())),
                    kwargs.get("temperature", 0.0),
                    kwargs.get("seed"),
                )
            )
            raise self._queue.popleft()
        return super().complete(prompt, **kwargs)


@dataclass
class Recorder:
    """Wraps a backend: every call, what it returned, and every token count the agent asked for."""

    inner: Any
    calls: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    keep_prompt_tail: int = 0
    keep_completion: bool = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        call: dict[str, Any] = {
            "prompt": sha(prompt),
            "grammar": grammar_sha(kwargs.get("grammar")),
            "max_tokens": kwargs.get("max_tokens"),
            "stop": list(kwargs.get("stop", ())),
            "temperature": kwargs.get("temperature"),
            "seed": kwargs.get("seed"),
            "streams": kwargs.get("on_token") is not None,
            "deadline": kwargs.get("deadline") is not None,
        }
        if self.keep_prompt_tail:
            call["prompt_tail"] = prompt[-self.keep_prompt_tail :]
        self.calls.append(call)
        try:
            completion = self.inner.complete(prompt, **kwargs)
        except ContextOverflowError as exc:
            call["raised"] = str(exc)
            raise
        if self.keep_completion:
            call["completion"] = {
                "text": completion.text,
                "finish_reason": completion.finish_reason,
                "usage": [
                    completion.usage.prompt_tokens,
                    completion.usage.cached_tokens,
                    completion.usage.generated_tokens,
                ],
                "rejections": [list(r) for r in completion.rejections],
            }
        return completion

    def warm(self, prefix: str) -> None:
        self.calls.append({"warm": sha(prefix)})
        self.inner.warm(prefix)

    def count_tokens(self, text: str) -> int:
        count = self.inner.count_tokens(text)
        self.counts[sha(text)] = count
        return count


class ReplayBackend:
    """Plays back recorded completions, refusing a call whose prompt, grammar or settings differ from the record."""

    def __init__(self, meta: dict[str, Any], calls: Sequence[dict[str, Any]], counts: dict[str, int]) -> None:
        self.name = meta["name"]
        self.context_size = meta["context_size"]
        self.chat_template = meta["chat_template"]
        self.bos_token = meta["bos_token"]
        self.eos_token = meta["eos_token"]
        self.capabilities = ScriptedBackend.capabilities
        self._describe = meta["describe"]
        self._calls = list(calls)
        self._counts = counts
        self.position = 0

    def warm(self, prefix: str) -> None:
        assert self.position < len(self._calls), "the agent warmed the cache more often than recorded"
        expected = self._calls[self.position]
        self.position += 1
        assert expected == {"warm": sha(prefix)}, f"call {self.position}: warm, recorded {expected}"

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        assert self.position < len(self._calls), "the agent made more calls than were recorded"
        expected = self._calls[self.position]
        self.position += 1
        got = {
            "prompt": sha(prompt),
            "grammar": grammar_sha(kwargs.get("grammar")),
            "max_tokens": kwargs.get("max_tokens"),
            "stop": list(kwargs.get("stop", ())),
            "temperature": kwargs.get("temperature"),
            "seed": kwargs.get("seed"),
            "streams": kwargs.get("on_token") is not None,
            "deadline": kwargs.get("deadline") is not None,
        }
        wanted = {key: expected[key] for key in got}
        assert got == wanted, f"call {self.position}: {got} != recorded {wanted}"
        if "raised" in expected:
            raise ContextOverflowError(expected["raised"])
        done = expected["completion"]
        completion = Completion(
            text=done["text"],
            finish_reason=done["finish_reason"],
            usage=Usage(*done["usage"]),
            rejections=[(int(offset), str(piece)) for offset, piece in done["rejections"]],
        )
        if kwargs.get("on_token") is not None and completion.text:
            kwargs["on_token"](completion.text)
        return completion

    def count_tokens(self, text: str) -> int:
        key = sha(text)
        assert key in self._counts, f"the agent counted tokens of a text the recording never counted: {text[:80]!r}"
        return self._counts[key]

    def describe(self) -> dict[str, Any]:
        return dict(self._describe)


def backend_meta(backend: Any) -> dict[str, Any]:
    return {
        "name": backend.name,
        "context_size": backend.context_size,
        "chat_template": backend.chat_template,
        "bos_token": backend.bos_token,
        "eos_token": backend.eos_token,
        "describe": backend.describe(),
    }


class EventLog:
    """Callbacks that write down what a live view would have seen."""

    def __init__(self) -> None:
        self.events: list[list[Any]] = []

    def callbacks(self) -> AgentCallbacks:
        return AgentCallbacks(
            on_step_start=lambda index, final_only: self.events.append(["start", index, final_only]),
            on_token=lambda text: self.events.append(["token", text]),
            on_tool_start=lambda tool, argument: self.events.append(["tool", tool, argument]),
            on_tool_end=lambda tool, argument, observation, error: self.events.append(
                ["tool_end", tool, argument, sha(observation), error]
            ),
            on_step=lambda record: self.events.append(["step", record.index, record.raw]),
        )


# --- the scripted scenarios -----------------------------------------------------------------------------------------


def _facts(*found: str, useful: bool = True) -> str:
    return json.dumps({"useful": useful, "facts": list(found)})


def _critique(sufficient: bool, answer: str = "", missing: str = "") -> str:
    return json.dumps({"sufficient": sufficient, "answer": answer, "missing": missing})


def _plan(*calls: tuple[str, str], thought: str = "Next.") -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": t, "argument": a} for t, a in calls]})


def _verdict(sufficient: bool, missing: str = "") -> str:
    return json.dumps({"sufficient": sufficient, "missing": missing})


BORN = "Marie Curie was born in Warsaw in 1867."
RIVER = "The Vistula river flows through Warsaw."
RIVER_Q = "Which river flows through the city where Marie Curie was born?"
HISTORY = [Turn("Who discovered polonium?", "Marie Curie"), Turn("Where is that?", None)]
OVERFLOW = ContextOverflowError("the prompt needs 5000 tokens; the context holds 4096")


@dataclass
class Scenario:
    name: str
    agent: str
    outputs: list[Any]
    question: str = "Where was Marie Curie born?"
    config: dict[str, Any] = field(default_factory=dict)
    history: list[Turn] = field(default_factory=list)
    # Through runner.Session.ask (self-consistency samples and the scope check live there), not agent.run.
    session: bool = False


SCENARIOS = [
    # react
    Scenario(
        "react-search-lookup-final",
        "react",
        [
            Completion("Thought: Marie Curie first.\nAction: search[Marie Curie]\n", rejections=[(9, "x"), (30, "y")]),
            "Thought: Her birthplace.\nAction: lookup[born]\n",
            "Thought: Warsaw.\nFinal: Warsaw",
        ],
        config={"budget_hint": True},
    ),
    Scenario(
        "react-retry-after-cut-off",
        "react",
        [
            Completion("Thought: I will think about this for a long", finish_reason="length", rejections=[(3, "z")]),
            "Thought: Short.\nFinal: 1867",
        ],
    ),
    Scenario(
        "react-cut-off-twice",
        "react",
        [Completion("Thought: long", finish_reason="length"), Completion("Thought: longer", finish_reason="length")],
    ),
    Scenario("react-unparseable", "react", ["I think it is Warsaw."]),
    Scenario(
        "react-repeat-refused-max-steps-force",
        "react",
        [
            "Thought: a\nAction: search[Warsaw]",
            "Thought: b\nAction: search[WARSAW]",
            "Thought: c\nAction: search[Vistula]",
        ],
        config={"max_steps": 3, "early_stopping": "force", "budget_hint": True},
    ),
    Scenario(
        "react-final-only-last-step",
        "react",
        ["Thought: a\nAction: search[Warsaw]", "Thought: b\nFinal: Poland"],
        config={"max_steps": 2, "budget_hint": True},
    ),
    Scenario("react-history", "react", ["Thought: x\nFinal: Warsaw"], history=HISTORY),
    Scenario("react-interrupted", "react", [Completion("Thought: x", finish_reason="interrupted")]),
    Scenario("react-overflow", "react", ["Thought: a\nAction: search[Warsaw]", OVERFLOW]),
    Scenario(
        "react-grammar-off",
        "react",
        ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Warsaw"],
        config={"grammar": False},
    ),
    Scenario(
        "react-tool-errors",
        "react",
        [
            "Thought: a\nAction: lookup[born]",
            "Thought: b\nAction: search[Marie Curie]",
            "Thought: c\nAction: lookup[Nobel]",
            "Thought: d\nAction: lookup[Nobel]",
            "Thought: e\nFinal: 1903",
        ],
        config={"observation_tokens": 40},
    ),
    # act, cot, standard
    Scenario("act-search-final", "act", ["Action: search[Marie Curie]", "Final: Warsaw"]),
    Scenario("act-max-steps", "act", ["Action: search[Warsaw]", "Final: Vistula"], config={"max_steps": 2}),
    Scenario("cot-one-step", "cot", ["Thought: She was born in Warsaw.\nFinal: Warsaw"]),
    Scenario("cot-small-settings", "cot", ["Thought: x\nFinal: Warsaw"], config={"max_tokens": 16, "thought_max": 20}),
    Scenario("standard-one-step", "standard", ["Final: Warsaw"], history=HISTORY),
    Scenario("standard-unparseable", "standard", ["Warsaw"]),
    # knowagent
    Scenario(
        "knowagent-search-lookup-finish",
        "knowagent",
        [
            Completion(
                "ActionPath: Start -> Search\nThought: Marie Curie first.\nAction: search[Marie Curie]\n",
                rejections=[(21, "Lookup"), (20, " Finish"), (21, " "), (29, "Lookup")],
            ),
            "ActionPath: Search -> Lookup\nThought: Her birthplace.\nAction: lookup[born]\n",
            "ActionPath: Lookup -> Finish\nThought: She was born in Warsaw.\nFinal: Warsaw",
        ],
    ),
    Scenario(
        "knowagent-retrieve",
        "knowagent",
        [
            "ActionPath: Start -> Retrieve\nThought: x\nAction: retrieve[pierre curie]\n",
            "ActionPath: Retrieve -> Lookup\nThought: x\nAction: lookup[born]\n",
            "ActionPath: Lookup -> Finish\nThought: x\nFinal: Paris",
        ],
        question="Where was Pierre Curie born?",
    ),
    Scenario(
        "knowagent-invalid-move-grammar-off",
        "knowagent",
        [
            "ActionPath: Start -> Search\nThought: x\nAction: search[Marie Curie]\n",
            "ActionPath: Search -> Lookup\nThought: x\nAction: lookup[born]\n",
            "ActionPath: Lookup -> Retrieve\nThought: x\nAction: retrieve[Warsaw]\n",
        ],
        config={"grammar": False},
    ),
    Scenario(
        "knowagent-missing-path-grammar-off",
        "knowagent",
        ["Thought: x\nAction: search[Warsaw]"],
        config={"grammar": False},
    ),
    Scenario(
        "knowagent-final-only",
        "knowagent",
        [
            "ActionPath: Start -> Search\nThought: x\nAction: search[Warsaw]\n",
            "ActionPath: Search -> Finish\nThought: y\nFinal: Poland",
        ],
        config={"max_steps": 2, "budget_hint": True},
        history=HISTORY,
    ),
    Scenario(
        "knowagent-retry-cut-off",
        "knowagent",
        [
            Completion(
                "ActionPath: Start -> Search\nThought: long", finish_reason="length", rejections=[(21, "Finish")]
            ),
            "ActionPath: Start -> Search\nThought: x\nAction: search[Warsaw]\n",
            Completion("ActionPath: Search -> Finish\nThought: y", finish_reason="interrupted"),
        ],
    ),
    # critic
    Scenario(
        "critic-stops-early",
        "critic",
        ["Thought: Marie Curie first.\nAction: search[Marie Curie]\n", _facts(BORN), _critique(True, answer="Warsaw")],
    ),
    Scenario(
        "critic-two-rounds",
        "critic",
        [
            Completion("Thought: Marie Curie first.\nAction: search[Marie Curie]", rejections=[(4, "q")]),
            _facts(BORN, "  marie curie was born in Warsaw in 1867 "),
            _critique(False, missing="the river of Warsaw"),
            "Thought: Now the river.\nAction: search[Warsaw river]",
            _facts(RIVER, BORN),
            _critique(True, answer="Vistula"),
        ],
        question=RIVER_Q,
        config={"budget_hint": True},
    ),
    Scenario(
        "critic-tool-error-not-useful-final",
        "critic",
        [
            "Thought: a\nAction: lookup[born]",
            "Thought: b\nAction: search[Vistula]",
            _facts(useful=False),
            "Thought: c\nFinal: Warsaw",
        ],
    ),
    Scenario(
        "critic-json-parse-errors-grammar-off",
        "critic",
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Sure! Marie Curie was born in Warsaw.",
            "Thought: b\nAction: search[Warsaw]",
            _facts(RIVER),
            "sufficient",
            "Thought: c\nFinal: Vistula",
        ],
        question=RIVER_Q,
        config={"grammar": False},
    ),
    Scenario(
        "critic-json-retry-and-empty-answer",
        "critic",
        [
            "Thought: a\nAction: search[Marie Curie]",
            Completion('{"useful": true, "facts": ["Marie', finish_reason="length"),
            _facts(BORN),
            _critique(True, answer="  "),
            "Thought: b\nFinal: Warsaw",
        ],
        config={"max_steps": 2},
    ),
    Scenario(
        "critic-json-interrupted",
        "critic",
        ["Thought: a\nAction: search[Marie Curie]", Completion('{"useful": tr', finish_reason="interrupted")],
    ),
    Scenario(
        "critic-json-overflow",
        "critic",
        ["Thought: a\nAction: search[Marie Curie]", _facts(BORN), OVERFLOW],
        history=HISTORY,
    ),
    Scenario("critic-step-overflow", "critic", [OVERFLOW]),
    Scenario(
        "critic-max-steps-force",
        "critic",
        [
            "Thought: a\nAction: search[Warsaw]",
            _facts(useful=False),
            "Thought: b\nAction: search[Vistula]",
            _facts(useful=False),
        ],
        config={"max_steps": 2, "early_stopping": "force"},
    ),
    # plan
    Scenario("plan-one-round", "plan", [_plan(("search", "Marie Curie")), _verdict(True), "Final: Warsaw"]),
    Scenario(
        "plan-missing-and-dropped",
        "plan",
        [
            _plan(("search", "Marie Curie")),
            _verdict(False, "the river of Warsaw"),
            _plan(("search", "marie  CURIE"), ("search", "Warsaw river")),
            _verdict(True),
            "Final: Vistula",
        ],
        question=RIVER_Q,
    ),
    Scenario("plan-no-calls", "plan", [_plan(thought="I know this."), "Final: 1867"]),
    Scenario(
        "plan-only-repeats",
        "plan",
        [_plan(("search", "Warsaw")), _verdict(False, "more"), _plan(("search", "warsaw")), "Final: Vistula"],
    ),
    Scenario(
        "plan-bounded-rounds",
        "plan",
        [
            _plan(("search", "Warsaw"), ("search", "Poland")),
            _verdict(False, "x"),
            _plan(("search", "Vistula")),
            _verdict(False, "y"),
            "Final: Vistula",
        ],
        config={"max_steps": 2},
    ),
    Scenario("plan-planner-unparseable", "plan", ["not json"], config={"grammar": False}),
    Scenario(
        "plan-evaluator-unparseable",
        "plan",
        [_plan(("search", "Warsaw")), "maybe", _plan(), "Final: Vistula"],
        config={"grammar": False},
    ),
    Scenario("plan-respond-unparseable", "plan", [_plan(), "Vistula"], config={"grammar": False}),
    Scenario(
        "plan-planner-retry",
        "plan",
        [Completion('{"thought": "x", "calls": [', finish_reason="length"), _plan(), "Final: Warsaw"],
    ),
    Scenario("plan-planner-overflow", "plan", [OVERFLOW]),
    Scenario("plan-respond-interrupted", "plan", [_plan(), Completion("Final: War", finish_reason="interrupted")]),
    Scenario(
        "plan-follow-up-by-rule",
        "plan",
        [_plan(), "Final: 1859"],
        question="And what about Pierre?",
        history=[Turn("Where was Marie Curie born?", "Warsaw")],
    ),
    Scenario(
        "plan-follow-up-asks-the-model",
        "plan",
        ['{"needs_previous": true}', _plan(), "Final: 1859"],
        question="Is the Vistula longer than it?",
        history=[Turn("Where was Marie Curie born?", "Warsaw")],
    ),
    Scenario(
        "plan-follow-up-overflow",
        "plan",
        [OVERFLOW, _plan(), "Final: 1859"],
        question="Is the Vistula longer than it?",
        history=[Turn("Where was Marie Curie born?", "Warsaw")],
    ),
]


SCOPE = "Physicists and chemists, and the geography of Poland."
CAT_Q = "Where was Marie Curie's cat Fluffy adopted?"  # half its terms are in the corpus: the scope rule asks the model
KNOW_SEARCH = "ActionPath: Start -> Search\nThought: x\nAction: search[Marie Curie]\n"

# Grounded answers, first_search, min_searches, stateful repeats, self-consistency samples and the scope check.
SCENARIOS += [
    Scenario(
        "react-grounded",
        "react",
        [
            "Thought: a\nAction: search[Marie Curie]",
            Completion("Thought: b\nFinal: Warsaw", rejections=[(3, "x"), (18, "K"), (19, "r")]),
        ],
        config={"grounded": True},
    ),
    Scenario("react-grounded-unread-answer", "react", ["Thought: a\nFinal: Krakow"], config={"grounded": True}),
    Scenario(
        "react-grounded-yes-final-only",
        "react",
        ["Thought: a\nAction: search[Warsaw]", "Thought: b\nFinal: yes"],
        question="Is Warsaw the capital of Poland?",
        config={"grounded": True, "max_steps": 2, "budget_hint": True},
    ),
    Scenario(
        "react-first-search",
        "react",
        ["Thought: found\nFinal: Warsaw"],
        config={"first_search": True, "budget_hint": True},
    ),
    Scenario(
        "react-first-search-brackets-grounded",
        "react",
        ["Thought: x\nFinal: 1867"],
        question="When [year] was  Marie Curie born?",
        config={"first_search": True, "grounded": True},
    ),
    Scenario(
        "react-first-search-one-step",
        "react",
        ["Thought: x\nFinal: Warsaw"],
        config={"first_search": True, "max_steps": 1},
    ),
    Scenario("act-first-search", "act", ["Final: Warsaw"], config={"first_search": True}),
    Scenario(
        "cot-first-search-grounded",
        "cot",
        ["Thought: x\nFinal: Marie Curie"],
        config={"first_search": True, "grounded": True},
    ),
    Scenario("standard-grounded", "standard", ["Final: Marie Curie"], config={"grounded": True}),
    Scenario(
        "react-min-searches",
        "react",
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Thought: b\nAction: search[marie curie]",
            "Thought: c\nAction: search[Warsaw]",
            "Thought: d\nFinal: Warsaw",
        ],
        config={"min_searches": 2, "max_steps": 5},
    ),
    Scenario(
        "react-min-searches-last-step",
        "react",
        ["Thought: a\nAction: search[Warsaw]", "Thought: b\nFinal: Poland"],
        config={"min_searches": 3, "max_steps": 2},
    ),
    Scenario(
        "act-min-searches-grounded",
        "act",
        ["Action: search[Warsaw]", "Final: Vistula"],
        config={"min_searches": 1, "grounded": True},
    ),
    Scenario(
        "react-lookup-repeats",
        "react",
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Thought: b\nAction: lookup[Nobel]",
            "Thought: c\nAction: lookup[Nobel]",
            "Thought: d\nAction: lookup[Nobel]",
            "Thought: e\nFinal: 1903",
        ],
        config={"max_steps": 6},
    ),
    Scenario(
        "knowagent-first-search-grounded-min-searches",
        "knowagent",
        [
            "ActionPath: Start -> Search\nThought: x\nAction: search[Warsaw]\n",
            "ActionPath: Search -> Finish\nThought: y\nFinal: Warsaw",
        ],
        config={"first_search": True, "grounded": True, "min_searches": 2},
    ),
    Scenario(
        "critic-first-search-grounded-min-searches",
        "critic",
        [
            "Thought: a\nAction: search[Marie Curie]",
            _facts(BORN),
            _critique(False, missing="x"),
            "Thought: b\nAction: search[Warsaw]",
            _facts(RIVER),
            _critique(False, missing="y"),
            "Thought: c\nFinal: Warsaw",
        ],
        config={"first_search": True, "grounded": True, "min_searches": 2, "max_steps": 3},
    ),
    Scenario(
        "plan-first-search-grounded-min-searches",
        "plan",
        [_plan(("search", "Marie Curie")), _verdict(True), "Final: Warsaw"],
        config={"first_search": True, "grounded": True, "min_searches": 2},
    ),
    Scenario(
        "react-samples",
        "react",
        [
            "Thought: a\nFinal: Warsaw",
            "Thought: b\nAction: search[Paris]",
            "Thought: c\nFinal: Paris",
            "Thought: d\nFinal: the Paris.",
        ],
        config={"samples": 3, "temperature": 0.2},
        session=True,
    ),
    Scenario(
        "react-scope-refused-by-rule",
        "react",
        [],
        question="How tall is Mount Everest?",
        config={"scope": SCOPE},
        session=True,
    ),
    Scenario("react-scope-refused-by-model", "react", ["no"], question=CAT_Q, config={"scope": SCOPE}, session=True),
    Scenario(
        "react-scope-kept-samples",
        "react",
        ["yes", "Thought: x\nFinal: Warsaw", "Thought: y\nFinal: Warsaw"],
        question=CAT_Q,
        config={"scope": SCOPE, "samples": 2, "grounded": False},
        session=True,
    ),
    Scenario(
        "knowagent-scope-refused",
        "knowagent",
        [],
        question="How tall is Mount Everest?",
        config={"scope": SCOPE},
        session=True,
    ),
    Scenario(
        "knowagent-samples",
        "knowagent",
        [
            Completion(KNOW_SEARCH, rejections=[(21, "Lookup")]),
            "ActionPath: Search -> Finish\nThought: y\nFinal: Warsaw",
            KNOW_SEARCH,
            "ActionPath: Search -> Finish\nThought: y\nFinal: Paris",
        ],
        config={"samples": 2},
        session=True,
    ),
    Scenario(
        "critic-samples",
        "critic",
        [
            "Thought: a\nAction: search[Marie Curie]",
            _facts(BORN),
            _critique(True, answer="Warsaw"),
            "Thought: b\nFinal: Warsaw",
        ],
        config={"samples": 2},
        session=True,
    ),
    Scenario(
        "plan-samples-scope",
        "plan",
        ["yes", _plan(("search", "Marie Curie")), _verdict(True), "Final: Warsaw", _plan(), "Final: Paris"],
        question=CAT_Q,
        config={"samples": 2, "scope": SCOPE},
        session=True,
    ),
]


def scenario_settings(name: str, flat: dict[str, Any]) -> AgentSettings:
    """A scenario's flat settings as `name`'s settings under the plain profile. Settings the strategy does not
    declare are dropped: they were recorded when every strategy took every setting (plan was given react's
    first_search and min_searches, and never read them)."""
    known = {*(item.name for item in fields(RunConfig)), *option_infos(agent_class(name).options_type)}
    return agent_settings(name, "plain", **{key: value for key, value in flat.items() if key in known})


def run_scenario(scenario: Scenario, index: Any) -> dict[str, Any]:
    backend = Recorder(OverflowingScripted(scenario.outputs), keep_prompt_tail=400)
    strategy = agent_class(scenario.agent)
    log = EventLog()
    settings = scenario_settings(scenario.agent, scenario.config)
    try:
        if scenario.session:
            session = Session.from_settings(settings, backend=backend, index=index, corpus="tiny")
            trajectory = session.ask(scenario.question, settings.config, log.callbacks(), scenario.history)
        else:
            agent = settings.build(backend, build_tools(index, agent_tools(strategy)), log.callbacks())
            trajectory = (
                agent.run(scenario.question, scenario.history) if scenario.history else agent.run(scenario.question)
            )
    except Exception as exc:
        raise AssertionError(f"{scenario.name}: {exc}") from exc
    assert not backend.inner._queue, f"{scenario.name}: outputs left over"
    return {"trajectory": normalise(trajectory), "calls": backend.calls, "events": log.events}


def scripted_index(folder: Path) -> Any:
    from offline_agent.retrieval import open_corpus

    for name, text in TINY_CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return open_corpus(folder)


def run_scripted() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        index = scripted_index(Path(folder))
        return {scenario.name: run_scenario(scenario, index) for scenario in SCENARIOS}


# --- real runs of the small model -----------------------------------------------------------------------------------

REAL_QUESTIONS = 3


def real_questions() -> list[str]:
    lines = (ROOT / "corpora" / "sample" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines[:REAL_QUESTIONS]]


def real_runs() -> list[tuple[str, str, list[Turn], dict[str, Any]]]:
    """(strategy, question, history, settings beyond real_settings) of every recorded real run, in run order."""
    questions = real_questions()
    runs: list[tuple[str, str, list[Turn], dict[str, Any]]] = [
        (name, question, [], {}) for name in STRATEGIES for question in questions
    ]
    follow = [Turn(questions[0], "1819")]
    runs += [
        ("react", "And where was she born?", follow, {}),
        ("plan", "Did George Eliot write it in English?", follow, {}),
    ]
    # main's answer controls on the model: grounded answers with the opening search, and two searches first.
    runs += [
        ("react", questions[0], [], {"grounded": True, "first_search": True}),
        ("react", questions[1], [], {"min_searches": 2}),
        ("knowagent", questions[2], [], {"grounded": True, "first_search": True}),
    ]
    # the product's defaults (the CLI's): verify with grounded, answer-form Finals and sentence evidence with links
    answer = profile_named("answer")
    runs += [(answer.agent, question, [], dict(answer.options)) for question in questions]
    return runs


def real_settings(name: str, **settings: Any) -> AgentSettings:
    return agent_settings(name, "plain", max_steps=4, temperature=0.0, seed=0, **settings)


def sample_index() -> Any:
    from offline_agent.retrieval import open_corpus

    return open_corpus(ROOT / "corpora" / "sample" / "docs")


def run_key(name: str, question: str, history: Sequence[dict[str, Any]], settings: dict[str, Any]) -> str:
    return json.dumps([name, question, list(history), settings], sort_keys=True)


def run_real(
    backend: Any,
    index: Any,
    on_run: Callable[[str, str], None] | None = None,
    kept: Sequence[dict[str, Any]] = (),
    kept_backend: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every real run on `backend` (reset before each, so a run never depends on the cache of the one before); a
    run recorded in `kept` (same strategy, question, history and settings) is taken from there, not run again,
    with `kept_backend`, the backend description it was recorded with. A run recorded now under a description
    other than `kept_backend` carries its own ("backend"), which replay_real uses for it."""
    recorded = {run_key(r["agent"], r["question"], r["history"], r["settings"]): r for r in kept}
    meta = backend_meta(backend)
    runs = []
    for name, question, history, settings in real_runs():
        key = run_key(name, question, [turn.to_dict() for turn in history], settings)
        if key in recorded:
            runs.append(recorded[key])
            continue
        if on_run:
            on_run(name, question)
        if hasattr(backend, "llm"):
            backend.llm.reset()
        recorder = Recorder(backend, keep_completion=True)
        strategy = agent_class(name)
        agent = real_settings(name, **settings).build(recorder, build_tools(index, agent_tools(strategy)))
        trajectory = agent.run(question, history) if history else agent.run(question)
        runs.append(
            {
                "agent": name,
                "question": question,
                "history": [turn.to_dict() for turn in history],
                "settings": settings,
                "calls": recorder.calls,
                "counts": recorder.counts,
                "trajectory": normalise(trajectory),
                **({"backend": meta} if kept_backend is not None and meta != kept_backend else {}),
            }
        )
    return {"backend": kept_backend if kept_backend is not None else meta, "runs": runs}


def replay_real(recorded: dict[str, Any], index: Any) -> list[dict[str, Any]]:
    """The recorded real runs again, each on a ReplayBackend: the normalised trajectories they build now."""
    out = []
    for run in recorded["runs"]:
        backend = ReplayBackend(run.get("backend", recorded["backend"]), run["calls"], run["counts"])
        strategy = agent_class(run["agent"])
        agent = real_settings(run["agent"], **run["settings"]).build(backend, build_tools(index, agent_tools(strategy)))
        history = [Turn.from_dict(turn) for turn in run["history"]]
        trajectory = agent.run(run["question"], history) if history else agent.run(run["question"])
        assert backend.position == len(run["calls"]), f"{run['agent']}: fewer calls than recorded"
        out.append(normalise(trajectory))
    return out


def load_small_backend() -> Any:
    from support import smollm_path

    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(smollm_path(), context_size=4096, seed=0, model_name="smollm2-135m-instruct")


# --- compare --------------------------------------------------------------------------------------------------------


def differences(expected: Any, got: Any, where: str = "", limit: int = 20) -> list[str]:
    """Paths where two JSON values differ (at most `limit`)."""
    out: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                if key not in a or key not in b:
                    out.append(f"{path}.{key}: {'missing now' if key not in b else 'new'}")
                else:
                    walk(a[key], b[key], f"{path}.{key}")
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                out.append(f"{path}: {len(a)} items recorded, {len(b)} now")
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                walk(x, y, f"{path}[{i}]")
        elif a != b:
            out.append(f"{path}: {a!r:.120} recorded, {b!r:.120} now")

    walk(expected, got, where)
    return out


def golden_path(kind: str) -> Path:
    return GOLDEN / f"{kind}.json"


def write_golden(kind: str, data: Any) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    golden_path(kind).write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n", "utf-8")


def read_golden(kind: str) -> Any:
    return json.loads(golden_path(kind).read_text(encoding="utf-8"))


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] not in ("record", "extend", "check"):
        print(__doc__)
        return 2
    action, kinds = argv[0], list(argv[1:]) or ["scripted", "smollm"]
    status = 0
    for kind in kinds:
        started = time.monotonic()
        if action == "extend" and kind != "smollm":
            print(f"extend records only smollm's real runs, not {kind!r}", file=sys.stderr)
            return 2
        if kind == "scripted":
            data = run_scripted()
        elif kind == "smollm":
            kept = read_golden(kind) if action == "extend" else {"runs": (), "backend": None}
            show = lambda a, q: print(f"  {a}: {q}", file=sys.stderr)  # noqa: E731
            data = run_real(load_small_backend(), sample_index(), show, kept["runs"], kept["backend"])
        else:
            print(f"unknown kind {kind!r}; choose from scripted, smollm", file=sys.stderr)
            return 2
        if action in ("record", "extend"):
            write_golden(kind, data)
            print(f"{kind}: recorded {golden_path(kind)} in {time.monotonic() - started:.1f} s")
            continue
        found = differences(read_golden(kind), data, kind)
        print(f"{kind}: {'identical' if not found else f'{len(found)}+ differences'}")
        for line in found:
            print("  " + line)
        status |= bool(found)
    return status


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main(sys.argv[1:]))
