"""AgentExecutor-style controls on the one loop: early stopping, the step budget hint, on_tool_end, intermediate
steps, and chat history with its context_for hook; driven by the scripted backend over the tiny corpus."""

from __future__ import annotations

import io
import json

import pytest
import support

from offline_agent.agents import AgentCallbacks, ReActAgent, RunConfig, agent_class
from offline_agent.backends import ScriptedBackend
from offline_agent.errors import ConfigError
from offline_agent.eval.results import config_differences
from offline_agent.runner import Session
from offline_agent.steps import Action, Trajectory, Turn
from offline_agent.tools import build_tools

SEARCH_WARSAW = "Thought: a\nAction: search[Warsaw]"
SEARCH_POLAND = "Thought: b\nAction: search[Poland]"
SEARCH_CURIE = "Thought: c\nAction: search[Marie Curie]"


def make_agent(index, outputs, callbacks=None, **config) -> tuple[ReActAgent, ScriptedBackend]:
    backend = ScriptedBackend(outputs)
    return support.make_agent(ReActAgent, backend, build_tools(index), callbacks, **config), backend


# ---- early stopping ------------------------------------------------------------------------------------------


def test_generate_makes_the_last_step_final_only(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, [SEARCH_WARSAW, "Thought: d\nFinal: Poland"], max_steps=2)
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Poland"
    assert "Action" in backend.calls[0].grammar and "Action" not in backend.calls[1].grammar
    assert trajectory.steps[1].final_only and trajectory.early_stopping == "generate"


def test_force_keeps_the_last_step_ordinary_and_stops_without_an_answer(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, [SEARCH_WARSAW, SEARCH_POLAND], max_steps=2, early_stopping="force")
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "max_steps" and trajectory.answer is None and trajectory.error is None
    assert all("Action" in call.grammar for call in backend.calls)
    assert not any(step.final_only for step in trajectory.steps)
    # the last step is an ordinary one: its tool ran and is recorded
    assert trajectory.steps[1].action == "search" and "Warsaw" in trajectory.steps[1].observation
    assert trajectory.early_stopping == "force"


def test_force_still_takes_a_final_on_the_last_step(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, [SEARCH_WARSAW, "Thought: d\nFinal: Poland"], max_steps=2, early_stopping="force")
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Poland"


def test_unknown_early_stopping_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown early_stopping 'stop'; choose from \['generate', 'force'\]"):
        RunConfig(early_stopping="stop")


# ---- the step budget hint -------------------------------------------------------------------------------------


def test_budget_hint_follows_each_observation_and_the_prompt_only_grows(tiny_index) -> None:
    outputs = [SEARCH_WARSAW, SEARCH_POLAND, SEARCH_CURIE, "Thought: d\nFinal: Warsaw"]
    agent, backend = make_agent(tiny_index, outputs, max_steps=4, budget_hint=True)
    trajectory = agent.run("q")
    prompts = [call.prompt for call in backend.calls]
    for before, after in zip(prompts, prompts[1:], strict=False):
        assert after.startswith(before)
    assert "steps left" not in prompts[0]
    notes = [prompts[i + 1][len(prompts[i]) :].rstrip("\n").rsplit(" (", 1)[1] for i in range(3)]
    assert notes == ["3 steps left)", "2 steps left)", "last step: only Final is allowed)"]
    # the note sits at the end of the Observation line, and only in the prompt, not on the recorded step
    added = prompts[1][len(prompts[0]) :]
    assert added.startswith(SEARCH_WARSAW + "\nObservation: ") and added.endswith(" (3 steps left)\n")
    assert all("steps left" not in (step.observation or "") for step in trajectory.steps)
    assert trajectory.budget_hint is True


def test_budget_hint_under_force_asks_for_the_final_answer(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index, [SEARCH_WARSAW, "Thought: d\nFinal: x"], max_steps=2, early_stopping="force", budget_hint=True
    )
    agent.run("q")
    assert backend.calls[1].prompt.endswith(" (last step: give the Final answer now)\n")


def test_budget_hint_without_grammar_does_not_promise_a_final_only_step(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index, [SEARCH_WARSAW, "Thought: d\nFinal: x"], max_steps=2, grammar=False, budget_hint=True
    )
    agent.run("q")
    assert backend.calls[1].prompt.endswith(" (last step: give the Final answer now)\n")


def test_budget_hint_also_follows_a_refused_repeat(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index, [SEARCH_WARSAW, SEARCH_WARSAW, "Thought: d\nFinal: x"], max_steps=5, budget_hint=True
    )
    agent.run("q")
    assert "already ran" in backend.calls[2].prompt and backend.calls[2].prompt.endswith(" (3 steps left)\n")


def test_no_budget_hint_by_default_leaves_the_prompt_as_before(tiny_index) -> None:
    outputs = [SEARCH_WARSAW, SEARCH_POLAND, "Thought: d\nFinal: x"]
    agent, backend = make_agent(tiny_index, outputs, max_steps=3)
    trajectory = agent.run("q")
    assert not any("steps left" in call.prompt or "last step" in call.prompt for call in backend.calls)
    assert backend.calls[1].prompt.endswith("\n") and trajectory.budget_hint is False


# ---- callbacks and intermediate steps -------------------------------------------------------------------------


def test_on_tool_end_gets_the_observation(tiny_index) -> None:
    ended: list[tuple] = []
    events: list[str] = []
    callbacks = AgentCallbacks(
        on_tool_start=lambda name, argument: events.append(f"start {name}"),
        on_tool_end=lambda *args: (ended.append(args), events.append(f"end {args[0]}")),
        on_step=lambda record: events.append(f"step {record.index}"),
    )
    outputs = [
        SEARCH_WARSAW,
        SEARCH_WARSAW,  # refused as a repeat: the tool does not run, so neither hook fires
        'Thought: e\nAction: calculator[{"expression": "1 +"}]',
        "Thought: d\nFinal: x",
    ]
    agent, _ = make_agent(tiny_index, outputs, callbacks)
    trajectory = agent.run("q")
    steps = trajectory.steps
    assert ended == [
        ("search", "Warsaw", steps[0].observation, False),
        ("calculator", {"expression": "1 +"}, steps[2].observation, True),
    ]
    assert events == ["start search", "end search", "step 0", "step 1", "start calculator", "end calculator"] + [
        "step 2",
        "step 3",
    ]


def test_intermediate_steps_are_action_observation_pairs(tiny_index) -> None:
    outputs = [SEARCH_WARSAW, 'Thought: e\nAction: calculator[{"expression": "2*3"}]', "Thought: d\nFinal: 6"]
    agent, _ = make_agent(tiny_index, outputs)
    trajectory = agent.run("q")
    pairs = trajectory.intermediate_steps
    assert [action for action, _ in pairs] == [Action("search", "Warsaw"), Action("calculator", {"expression": "2*3"})]
    assert pairs[0][1] == trajectory.steps[0].observation and pairs[1][1] == "2*3 = 6"
    assert Trajectory.from_json(trajectory.to_json()).intermediate_steps == pairs


def test_live_view_shows_the_tool_as_it_runs(tiny_index) -> None:
    from offline_agent.cli.ask import LiveView

    stream = io.StringIO()
    outputs = [SEARCH_WARSAW, SEARCH_WARSAW, "Thought: d\nFinal: x"]
    agent, _ = make_agent(tiny_index, outputs, LiveView(stream).callbacks())
    agent.run("q")
    text = stream.getvalue()
    assert "Action: search[Warsaw]\n… running search[Warsaw]\nObservation: [1] " in text
    # each Observation once: the one that ran (shown when the tool ended) and the refused repeat (shown with its step)
    assert text.count("Observation:") == 2 and "already ran" in text
    assert text.count("… running") == 1


# ---- history (chat) -------------------------------------------------------------------------------------------

HISTORY = [
    Turn("Who was born in Warsaw in 1867?", "Marie Curie"),
    Turn("Which river is the longest in Poland?", "Vistula"),
    Turn("Where does it flow into the sea?", None),
    Turn("Who shared her 1903 prize?", "Pierre Curie"),
    Turn("Where was he born?", "Paris"),
]


def test_context_for_picks_the_last_three_answered_turns(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, [])
    assert agent.context_for("q", HISTORY) == [HISTORY[1], HISTORY[3], HISTORY[4]]
    assert agent.context_for("q", HISTORY[:2]) == HISTORY[:2]
    assert agent.context_for("q", [Turn("x", None)]) == [] and agent.context_for("q", []) == []


def test_history_is_shown_before_the_question_and_recorded(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, ["Thought: d\nFinal: 1859"])
    trajectory = agent.run("When was he born?", HISTORY)
    expected = (
        "Earlier in this conversation:\n"
        "Question: Which river is the longest in Poland?\nAnswer: Vistula\n"
        "Question: Who shared her 1903 prize?\nAnswer: Pierre Curie\n"
        "Question: Where was he born?\nAnswer: Paris\n\n"
        "Question: When was he born?"
    )
    assert expected in backend.calls[0].prompt
    assert "Who was born in Warsaw" not in backend.calls[0].prompt
    assert trajectory.history == [HISTORY[1], HISTORY[3], HISTORY[4]]
    again = Trajectory.from_json(trajectory.to_json())
    assert again == trajectory and again.history[0] == Turn("Which river is the longest in Poland?", "Vistula")


def test_prompt_hash_includes_the_history(tiny_index) -> None:
    def run(history) -> Trajectory:
        return make_agent(tiny_index, ["Thought: d\nFinal: x"])[0].run("q", history)

    alone, one, other = run(()), run(HISTORY[:1]), run(HISTORY[1:2])
    assert len({alone.prompt_sha256, one.prompt_sha256, other.prompt_sha256}) == 3
    assert alone.history == [] and run(()).prompt_sha256 == alone.prompt_sha256


def test_without_history_the_user_message_is_the_question_alone(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, [])
    assert agent.prompt_parts("Where?").user == "Question: Where?"
    assert agent.prompt_parts("Where?", [Turn("Who?", "Ann")]).user == (
        "Earlier in this conversation:\nQuestion: Who?\nAnswer: Ann\n\nQuestion: Where?"
    )


class OnlyLastTurn(ReActAgent):
    """A strategy with its own rule: the previous turn, answered or not."""

    def context_for(self, question, history):
        return list(history[-1:])


def test_context_for_is_a_hook(tiny_index) -> None:
    backend = ScriptedBackend(["Thought: d\nFinal: x"])
    trajectory = OnlyLastTurn(backend, build_tools(tiny_index)).run("q", HISTORY[:3])
    assert trajectory.history == [HISTORY[2]]
    assert "Question: Where does it flow into the sea?\nAnswer: (no answer)\n\nQuestion: q" in backend.calls[0].prompt


@pytest.mark.parametrize(
    "name, output", [("act", "Final: x"), ("cot", "Thought: t\nFinal: x"), ("standard", "Final: x")]
)
def test_every_strategy_shows_the_history(name: str, output: str, tiny_index) -> None:
    backend = ScriptedBackend([output])
    agent = agent_class(name)(backend, build_tools(tiny_index), RunConfig())
    trajectory = agent.run("And where was he born?", HISTORY[3:4])
    assert (
        "Question: Who shared her 1903 prize?\nAnswer: Pierre Curie\n\nQuestion: And where" in backend.calls[0].prompt
    )
    assert trajectory.history == HISTORY[3:4] and trajectory.answer == "x"


def test_session_passes_the_history(tiny_index) -> None:
    backend = ScriptedBackend(["Thought: d\nFinal: Paris"])
    session = Session(backend=backend, index=tiny_index, corpus="tiny")
    trajectory = session.ask("Where was he born?", RunConfig(), None, history=HISTORY[3:4])
    assert trajectory.history == HISTORY[3:4] and "Answer: Pierre Curie" in backend.calls[0].prompt


def test_turn_round_trip() -> None:
    for turn in [Turn("q", None), Turn("Ünï?", "a")]:
        assert Turn.from_dict(json.loads(json.dumps(turn.to_dict()))) == turn


def test_a_trajectory_written_before_these_controls_still_loads(tiny_index) -> None:
    data = make_agent(tiny_index, ["Thought: d\nFinal: x"])[0].run("q").to_dict()
    for key in ("history", "early_stopping", "budget_hint"):
        data.pop(key)
    old = Trajectory.from_dict(data)
    assert old.history == [] and old.early_stopping == "generate" and old.budget_hint is False


# ---- run folders written before these controls ---------------------------------------------------------------


def test_an_old_run_config_compares_as_the_behaviour_it_had() -> None:
    from offline_agent.agents import agent_settings

    def config(**agent_config) -> dict:
        return {"agent_config": agent_config, "seed": 0, "backend": "llamacpp"}

    now = agent_settings("react", "plain").flat()
    old = {key: value for key, value in now.items() if key not in ("early_stopping", "budget_hint")}
    # runs written before had no budget hint (now the default), a Final-only last step, and no backend field
    # (they all ran in llama.cpp)
    assert config_differences({k: v for k, v in config(**old).items() if k != "backend"}, config(**now)) == []
    assert config_differences(config(**old), config(**{**now, "budget_hint": True})) == [
        "agent_config.budget_hint: False there, True now"
    ]
    forced = {**now, "budget_hint": False, "early_stopping": "force"}
    assert config_differences(config(**old), config(**forced)) == [
        "agent_config.early_stopping: 'generate' there, 'force' now"
    ]
