"""The critic agent (`--agent critic`): search, extract facts, judge the memory; scripted over the tiny corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import support
from support import cli_env

from offline_agent.agents import AGENTS, RunConfig, agent_class, agent_settings
from offline_agent.agents.critic import CriticAgent, Critique, Extraction, Memory
from offline_agent.backends import ScriptedBackend
from offline_agent.details import CritiqueDetails, ExtractionDetails
from offline_agent.errors import ContextOverflowError
from offline_agent.grammar import json_grammar
from offline_agent.runner import Session
from offline_agent.steps import Completion, Trajectory, Turn
from offline_agent.tools import build_tools

QUESTION = "Which river flows through the city where Marie Curie was born?"
BORN = "Marie Curie was born in Warsaw in 1867."
RIVER = "The Vistula river flows through Warsaw."


def make_agent(index, outputs, **config) -> tuple[CriticAgent, ScriptedBackend]:
    backend = ScriptedBackend(outputs)
    return support.make_agent(CriticAgent, backend, build_tools(index), **config), backend


def facts(*found: str, useful: bool = True) -> str:
    return json.dumps({"useful": useful, "facts": list(found)})


def verdict(sufficient: bool, answer: str = "", missing: str = "") -> str:
    return json.dumps({"sufficient": sufficient, "answer": answer, "missing": missing})


def test_grounded_the_critics_answer_must_be_a_span_of_what_was_read(tiny_index) -> None:
    # Grounded (the product's default), the critic's answer stands only where a Final could be it: "Krakow" was
    # never read, so the verdict counts as not sufficient and the rounds go on; the model's own Final is then built
    # from the Observations read (and the critic's "Warsaw" would have stood).
    outputs = [
        "Thought: Marie Curie first.\nAction: search[Marie Curie]\n",
        facts(BORN),
        verdict(True, answer="Krakow"),
        "Thought: She was born in Warsaw.\nFinal: Warsaw",
    ]
    agent, backend = make_agent(tiny_index, outputs, grounded=True, answer_form=True)
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw" and len(trajectory.steps) == 2
    critic = trajectory.steps[0].details.critic
    assert critic.sufficient and critic.answer == "Krakow" and "not a span" in critic.note
    assert trajectory.steps[1].details.grounding.sentences > 1  # the Observation was read
    agent, _ = make_agent(tiny_index, [*outputs[:2], verdict(True, answer="Warsaw")], grounded=True, answer_form=True)
    assert agent.run("Where was Marie Curie born?").answer == "Warsaw"


def test_the_critic_stops_early_with_its_answer(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: Marie Curie first.\nAction: search[Marie Curie]\n",
            facts(BORN),
            verdict(True, answer="Warsaw"),
        ],
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    assert len(trajectory.steps) == 1 and len(backend.calls) == 3
    step = trajectory.steps[0]
    assert step.action == "search" and step.argument == "Marie Curie" and step.final is None
    # The search tool's details stay (the evaluation's support recall reads the titles); the JSON calls join them.
    assert step.details.seen_titles[0] == "Marie Curie"
    assert step.details.extraction.to_dict() == {
        "raw": facts(BORN),
        "attempts": 1,
        "useful": True,
        "facts": [BORN],
        "added": [BORN],
    }
    assert step.details.critic.to_dict() == {
        "raw": verdict(True, answer="Warsaw"),
        "attempts": 1,
        "sufficient": True,
        "answer": "Warsaw",
        "missing": "",
    }
    assert step.details.memory == [BORN]
    # The round's cost is the three calls together.
    assert step.usage.prompt_tokens == sum(backend.count_tokens(call.prompt) for call in backend.calls)
    assert step.usage.generated_tokens == sum(
        backend.count_tokens(text) for text in (step.raw, facts(BORN), verdict(True, answer="Warsaw"))
    )


def test_the_json_calls_run_under_their_json_grammars(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index, ["Thought: x\nAction: search[Marie Curie]", facts(BORN), verdict(True, answer="Warsaw")]
    )
    agent.run("Where was Marie Curie born?")
    step_call, extract_call, judge_call = backend.calls
    assert step_call.grammar == agent.grammar.gbnf
    assert extract_call.grammar == json_grammar(Extraction).gbnf == agent.extract_call.grammar.gbnf
    assert judge_call.grammar == json_grammar(Critique).gbnf == agent.critic_call.grammar.gbnf
    assert extract_call.max_tokens == judge_call.max_tokens == 160
    assert extract_call.prompt.rstrip().endswith("Task: EXTRACT<|im_end|>\n<|im_start|>assistant")
    assert "Observation: [1] Marie Curie:" in extract_call.prompt
    assert judge_call.prompt.rstrip().endswith("Task: JUDGE<|im_end|>\n<|im_start|>assistant")


def test_the_memory_replaces_the_observations_in_the_next_prompt(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: Marie Curie first.\nAction: search[Marie Curie]",
            facts(BORN, "  marie curie was born in Warsaw in 1867 "),  # a repeat in other clothes
            verdict(False, missing="the river of Warsaw"),
            "Thought: Now the river.\nAction: search[Warsaw river]",
            facts(RIVER, BORN),
            verdict(True, answer="Vistula"),
        ],
    )
    trajectory = agent.run(QUESTION)
    assert trajectory.stop_reason == "final" and trajectory.answer == "Vistula"
    first, second = trajectory.steps
    assert first.details.memory == [BORN] and second.details.memory == [BORN, RIVER]
    assert second.details.extraction.added == [RIVER]

    prompts = [call.prompt for call in backend.calls]
    step_two = prompts[3]
    memory = f"Question: {QUESTION}\n\nKnown facts:\n1. {BORN}\n"
    assert memory + "Already tried: search[Marie Curie]\nStill missing: the river of Warsaw\nTask: STEP" in step_two
    # No raw Observation reaches the step prompt: only the facts drawn from it.
    assert "Observation:" not in step_two.split("<|im_start|>user")[-1]
    assert "She won the Nobel Prize" not in step_two and "She won the Nobel Prize" in prompts[1]
    # The fixed parts come first: the judge's prompt and the next step's share everything up to the memory.
    shared = prompts[2][: prompts[2].index(memory) + len(memory)]
    assert step_two.startswith(shared) and prompts[4].startswith(shared)
    assert prompts[0].startswith(shared[: shared.index("Known facts:")])


def test_the_last_round_may_only_answer(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: x\nAction: search[Marie Curie]",
            facts(BORN),
            verdict(False, missing="the river"),
            "Thought: Warsaw is on the Vistula.\nFinal: Vistula",
        ],
        max_steps=2,
        budget_hint=True,
    )
    trajectory = agent.run(QUESTION)
    assert trajectory.stop_reason == "final" and trajectory.answer == "Vistula"
    assert backend.calls[0].grammar == agent.grammar.gbnf
    assert backend.calls[3].grammar == agent.final_grammar.gbnf and "Action" not in backend.calls[3].grammar
    assert trajectory.steps[-1].final_only and trajectory.steps[-1].final == "Vistula"
    assert "Task: STEP (last step: only Final is allowed)" in backend.calls[3].prompt


def test_rounds_are_at_most_max_rounds_and_max_steps_lowers_them(tiny_index) -> None:
    assert make_agent(tiny_index, [])[0].config.max_steps == CriticAgent.max_rounds == 4
    assert make_agent(tiny_index, [], max_steps=2)[0].config.max_steps == 2
    agent, backend = make_agent(
        tiny_index,
        [
            *[
                out
                for topic in ("Marie Curie", "Warsaw", "Vistula")
                for out in (f"Thought: x\nAction: search[{topic}]", facts(f"A fact about {topic}."), verdict(False))
            ],
            "Thought: I have to answer.\nFinal: Vistula",
        ],
        max_steps=20,
    )
    trajectory = agent.run(QUESTION)
    assert len(trajectory.steps) == 4 and trajectory.max_steps == 4 and trajectory.steps[3].final_only
    assert trajectory.answer == "Vistula" and not backend._queue


def test_without_the_grammar_a_run_can_end_at_max_steps(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index, ["Thought: x\nAction: search[Marie Curie]", facts(BORN), verdict(False)], max_steps=1, grammar=False
    )
    trajectory = agent.run(QUESTION)
    assert trajectory.stop_reason == "max_steps" and trajectory.answer is None
    assert trajectory.steps[0].details.critic.sufficient is False


def test_malformed_json_without_the_grammar_is_recorded_and_the_run_goes_on(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: x\nAction: search[Marie Curie]",
            "Sure! Marie Curie was born in Warsaw.",  # not JSON: the round goes on without facts
            "Thought: y\nAction: search[Warsaw]",
            facts(RIVER),
            '{"sufficient": yes, "answer": "Vistula"}',  # not JSON: counts as not sufficient
            "Thought: The Vistula.\nFinal: Vistula",
        ],
        grammar=False,
    )
    trajectory = agent.run(QUESTION)
    assert trajectory.stop_reason == "final" and trajectory.answer == "Vistula" and trajectory.error is None
    assert all(call.grammar is None for call in backend.calls)
    first, second, third = trajectory.steps
    assert first.details.extraction.parse_error["label"] == "invalid"
    assert first.details.extraction.raw == "Sure! Marie Curie was born in Warsaw."
    assert first.details.critic == CritiqueDetails(skipped="no new facts") and first.details.memory == []
    assert first.parse_error is None  # the step itself parsed; only the JSON call failed
    assert second.details.critic.parse_error["label"] == "invalid"
    assert second.details.critic.sufficient is False
    assert third.final == "Vistula"


def test_a_cut_off_json_reply_gets_one_retry_with_twice_the_tokens(tiny_index) -> None:
    cut = Completion(text='{"useful": true, "facts": ["Marie Curie was', finish_reason="length")
    agent, backend = make_agent(
        tiny_index, ["Thought: x\nAction: search[Marie Curie]", cut, facts(BORN), verdict(True, answer="Warsaw")]
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.answer == "Warsaw"
    assert [call.max_tokens for call in backend.calls[1:3]] == [160, 320]
    assert trajectory.steps[0].details.extraction.attempts == 2


def test_a_truncated_json_reply_is_labelled(tiny_index) -> None:
    cut = Completion(text='{"sufficient": true, "answer": "Vis', finish_reason="length")
    agent, _ = make_agent(
        tiny_index,
        ["Thought: x\nAction: search[Marie Curie]", facts(BORN), cut, cut, "Thought: y\nFinal: Vistula"],
        max_steps=2,
    )
    trajectory = agent.run(QUESTION)
    critic = trajectory.steps[0].details.critic.to_dict()
    assert critic["parse_error"]["label"] == "truncated" and critic["sufficient"] is False
    assert trajectory.answer == "Vistula"


def test_a_sufficient_verdict_without_an_answer_does_not_stop(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        ["Thought: x\nAction: search[Marie Curie]", facts(BORN), verdict(True), "Thought: y\nFinal: Warsaw"],
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert len(trajectory.steps) == 2 and trajectory.answer == "Warsaw"
    assert "empty answer" in trajectory.steps[0].details.critic.note


def test_tool_errors_and_useless_observations_add_no_facts(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: x\nAction: lookup[born]",  # lookup before any search: a tool error, nothing to extract
            "Thought: x\nAction: search[Pierre Curie]",
            facts("Pierre Curie was born in Paris.", useful=False),
            "Thought: x\nFinal: unknown",
        ],
    )
    trajectory = agent.run("Where was Marie Curie born?")
    first, second, _ = trajectory.steps
    assert first.tool_error and first.details.extraction == ExtractionDetails(skipped="the tool failed")
    assert second.details.extraction.useful is False and second.details.memory == []
    assert second.details.critic == CritiqueDetails(skipped="no new facts")
    assert len(backend.calls) == 4  # no critic call when the memory did not change


def test_a_final_written_by_the_model_needs_no_json_call(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, ["Thought: I know this.\nFinal: Warsaw\n"], budget_hint=True)
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.answer == "Warsaw" and len(backend.calls) == 1
    assert "Known facts: none yet.\nTask: STEP (4 steps left)" in backend.calls[0].prompt


def test_a_step_the_parser_rejects_ends_the_run_as_in_react(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, ["I will look it up."], grammar=False)
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "error" and trajectory.steps[0].parse_error is not None


def test_a_json_call_cut_by_the_time_limit_stops_with_timeout(tiny_index) -> None:
    interrupted = Completion(text='{"useful": tr', finish_reason="interrupted")
    agent, _ = make_agent(tiny_index, ["Thought: x\nAction: search[Marie Curie]", interrupted])
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "timeout" and trajectory.answer is None and len(trajectory.steps) == 1
    assert trajectory.steps[0].details.extraction is None and trajectory.steps[0].details.memory == []


class _OverflowingBackend(ScriptedBackend):
    """Refuses its third prompt as too long for the context window."""

    def complete(self, prompt: str, **kwargs):  # type: ignore[override]
        if len(self.calls) == 2:
            raise ContextOverflowError("the prompt no longer fits the context window")
        return super().complete(prompt, **kwargs)


def test_a_json_call_over_the_context_window_stops_with_an_error(tiny_index) -> None:
    backend = _OverflowingBackend(["Thought: x\nAction: search[Marie Curie]", facts(BORN)])
    trajectory = CriticAgent(backend, build_tools(tiny_index)).run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "error" and "context window" in trajectory.error
    assert trajectory.steps[0].details.memory == [BORN] and trajectory.steps[0].details.critic is None


def test_a_chat_shows_earlier_turns_before_the_question(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, ["Thought: known.\nFinal: 1867"])
    agent.run("And when was she born?", history=[Turn("Where was Marie Curie born?", "Warsaw")])
    user = backend.calls[0].prompt.split("<|im_start|>user\n")[-1]
    assert user.startswith("Earlier in this conversation:\nQuestion: Where was Marie Curie born?\nAnswer: Warsaw")
    assert "\n\nQuestion: And when was she born?\n\nKnown facts: none yet." in user


def test_memory_deduplicates_and_is_bounded() -> None:
    memory = Memory()
    assert memory.render() == "Known facts: none yet."
    added, dropped = memory.add(["A b.", " a  B ", "", "c"])
    assert (added, dropped) == (["A b.", "c"], 0)
    assert memory.render() == "Known facts:\n1. A b.\n2. c"
    added, dropped = memory.add([f"fact {n}" for n in range(30)])
    assert len(memory.facts) == 24 and dropped == 8 and len(added) == 22


def test_the_trajectory_round_trips_with_the_details(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index, ["Thought: x\nAction: search[Marie Curie]", facts(BORN), verdict(True, answer="Warsaw")]
    )
    trajectory = agent.run("Where was Marie Curie born?")
    again = Trajectory.from_json(trajectory.to_json())
    assert again.steps[0].details == trajectory.steps[0].details and again.agent == "critic"
    assert trajectory.grammar_sha256 is not None and len(trajectory.grammar_sha256) == 64


def test_registered_and_usable_through_a_session(tiny_index) -> None:
    assert AGENTS["critic"] is CriticAgent and agent_class("critic") is CriticAgent
    backend = ScriptedBackend(["Thought: x\nAction: search[Marie Curie]", facts(BORN), verdict(True, answer="Warsaw")])
    session = Session(backend=backend, index=tiny_index, corpus="tiny", agent="critic")
    trajectory = session.ask("Where was Marie Curie born?", RunConfig())
    assert trajectory.agent == "critic" and trajectory.answer == "Warsaw" and trajectory.corpus == "tiny"


def test_an_evaluation_run_counts_the_json_calls(tiny_corpus: Path, tmp_path: Path) -> None:
    from offline_agent.eval.results import RunFolder
    from offline_agent.eval.runner import EvalOptions, run_evaluation

    questions = tmp_path / "questions.jsonl"
    row = {"id": "q1", "question": QUESTION, "answer": "Vistula", "supporting_titles": ["Marie Curie", "Warsaw"]}
    questions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    backend = ScriptedBackend(
        [
            "Thought: x\nAction: search[Marie Curie]",
            facts(BORN),
            verdict(False, missing="the river"),
            "Thought: y\nAction: search[Warsaw]",
            facts(RIVER),
            verdict(True, answer="Vistula"),
        ]
    )
    out = tmp_path / "run"
    summary = run_evaluation(
        EvalOptions(dataset=questions, pool=tiny_corpus, out=out, settings=agent_settings("critic")), backend=backend
    )
    (result,) = RunFolder(out).read_results()
    assert result["prediction"] == "Vistula" and result["em"] == 1.0 and result["support_recall"] == 1.0
    assert summary["tokens"]["prompt"] == sum(backend.count_tokens(call.prompt) for call in backend.calls)


@pytest.mark.parametrize(("agent", "code"), [("critic", 1), ("no-such-agent", 2)])
def test_cli_ask_accepts_agent_critic(isolated_home: Path, tmp_path: Path, agent: str, code: int) -> None:
    # With a missing model file the run fails after option parsing: exit 1 (not 2, a usage error) proves
    # `--agent critic` was accepted without loading a model.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "offline_agent.cli",
            "ask",
            "Who?",
            "--agent",
            agent,
            "--model",
            str(tmp_path / "x.gguf"),
        ],
        capture_output=True,
        text=True,
        env=cli_env(isolated_home),
        timeout=120,
    )
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    if code == 1:
        assert "model file not found" in result.stderr
