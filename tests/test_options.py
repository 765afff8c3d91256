"""The options model: each strategy's typed options, the profiles, `-o KEY=VALUE` and the old flags, on the
scripted backend (the CLI in-process, its model loading patched to return the scripted backend)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_eval_cli import cli, scripted  # noqa: F401  (the fixtures)

from offline_agent.agents import (
    AGENTS,
    PROFILES,
    AgentSettings,
    KnowAgentOptions,
    RagAgent,
    RagOptions,
    ReActAgent,
    ReActOptions,
    RunConfig,
    StrategyOptions,
    VerifyOptions,
    agent_class,
    agent_settings,
    option,
    option_infos,
    profile_named,
    register_strategy,
)
from offline_agent.agents.options import make_options, parse_assignments
from offline_agent.backends import ScriptedBackend
from offline_agent.cli import legacy
from offline_agent.details import DETAILS
from offline_agent.errors import ConfigError
from offline_agent.runner import Session
from offline_agent.steps import Trajectory
from offline_agent.tools import build_tools

ROOT = Path(__file__).resolve().parents[1]
# What `ask`, `chat`, `eval` and `mcp` ran before profiles existed (agents.ANSWER_DEFAULTS and DEFAULT_AGENT).
ANSWER_BEFORE = {
    "grounded": True,
    "answer_form": True,
    "search_k": 4,
    "snippet": "sentences",
    "sentences": 2,
    "links": 4,
    "observation_tokens": 600,
    "exclude_refused": True,
    "read_hop": True,
}
# The answer profile now: what the commands ran before, and the defaults changed since (each measured on the
# three development corpora; docs/answers.md).
ANSWER_NOW = {
    **ANSWER_BEFORE,
    "section_sentences_after": 1,
    "section_sentences": 3,
    "section_defaults": True,
    "search_with_question": True,
}


def invoke(cli, *args: str):  # noqa: F811
    return CliRunner().invoke(cli, list(args), prog_name="offline-agent", catch_exceptions=False)


# ---- each strategy's options ---------------------------------------------------------------------------------


def test_each_strategy_declares_its_options_and_extends_its_parents() -> None:
    kinds = {name: strategy.options_type for name, strategy in AGENTS.items()}
    assert kinds == {
        "verify": VerifyOptions,
        "react": ReActOptions,
        "act": ReActOptions,
        "cot": ReActOptions,
        "standard": ReActOptions,
        "critic": ReActOptions,
        "knowagent": KnowAgentOptions,
        "plan": StrategyOptions,
        "rag": RagOptions,
    }
    # A strategy that extends another extends its options, except rag, which replaces every react hook that reads
    # react's own options (min_searches, first_search, fresh_calls are about steps its model never chooses).
    for strategy in AGENTS.values():
        for parent in strategy.__mro__[1:]:
            if hasattr(parent, "options_type") and strategy is not RagAgent:
                assert issubclass(strategy.options_type, parent.options_type), (strategy, parent)
    assert set(option_infos(VerifyOptions)) - set(option_infos(ReActOptions)) == {
        "exclude_refused",
        "search_after_refusal",
        "read_hop",
        "without",
    }
    assert set(option_infos(KnowAgentOptions)) - set(option_infos(ReActOptions)) == {"action_graph"}
    assert set(option_infos(RagOptions)) == set(option_infos(StrategyOptions))  # own defaults, no options of its own


@pytest.mark.parametrize("kind", [StrategyOptions, ReActOptions, VerifyOptions, KnowAgentOptions])
def test_every_option_has_a_type_a_default_and_one_line_of_help(kind: type[StrategyOptions]) -> None:
    for key, info in option_infos(kind).items():
        assert info.type in ("bool", "int", "float", "str", "path"), key
        assert info.help and "\n" not in info.help and len(info.help) <= 120, key
        assert info.check(info.default, "test") == info.default
    assert kind() == make_options(kind, {}, owner="test")


def test_run_settings_and_options_never_share_a_key() -> None:
    run = {item.name for item in fields(RunConfig)}
    for strategy in AGENTS.values():
        assert not run & set(option_infos(strategy.options_type)), strategy.name


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        *[("read_hop", word, True) for word in ("true", "yes", "on", "1", "TRUE", " Yes ")],
        *[("read_hop", word, False) for word in ("false", "no", "off", "0", "Off")],
        ("search_k", "7", 7),
        ("snippet", "sentences", "sentences"),
        ("read-hop", "no", False),  # a dash in the key is read as an underscore
    ],
)
def test_values_parse_by_the_options_type(key: str, text: str, value: object) -> None:
    settings = agent_settings("verify", options=parse_assignments([f"{key}={text}"]))
    assert getattr(settings.options, key.replace("-", "_")) == value


@pytest.mark.parametrize(
    ("agent", "pairs", "message"),
    [
        (
            "verify",
            ["read_hops=false"],
            "unknown option 'read_hops' for strategy verify; choose from ['abstain', 'answer_form', 'exclude_refused', "
            "'first_search', 'fresh_calls', 'grounded', 'links', 'min_searches', 'observation_tokens', 'read_hop', "
            "'search_after_refusal', 'search_k', 'search_spans', 'search_with_question', 'section_defaults', "
            "'section_sentences', 'section_sentences_after', 'sentences', 'sentences_after', 'snippet', "
            "'support_check', 'title_boost', 'without']",
        ),
        (
            "react",
            ["read_hop=false"],
            "unknown option 'read_hop' for strategy react; choose from ['abstain', 'answer_form', ",
        ),
        (
            "verify",
            ["read_hop=maybe"],
            "option read_hop of strategy verify takes a bool (true/false, yes/no, on/off, 1/0), not 'maybe'",
        ),
        ("react", ["search_k=four"], "option search_k of strategy react takes an int from 1 to 20, not 'four'"),
        ("react", ["search_k=0"], "option search_k of strategy react takes an int from 1 to 20, not 0"),
        ("react", ["snippet=all"], "option snippet of strategy react takes one of ['head', 'sentences'], not 'all'"),
        ("react", ["read_hop"], "-o takes KEY=VALUE, not 'read_hop'"),
        ("knowagent", ["action_graph=/no/such.toml"], "action graph /no/such.toml: cannot read it"),
        (
            "verify",
            ["without=sides,nope"],
            "option without of strategy verify: no check or rewrite named nope; choose from unread, one_side, ",
        ),
    ],
)
def test_a_bad_option_is_one_line_that_says_what_is_valid(agent: str, pairs: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        agent_settings(agent, options=parse_assignments(pairs))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_python_values_are_checked_as_the_command_line_is() -> None:
    with pytest.raises(ConfigError, match="option links of ReActOptions takes an int from 0 to 20, not 21"):
        ReActOptions(links=21)
    with pytest.raises(ConfigError, match="takes a bool .*, not 1"):
        ReActOptions(grounded=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown setting 'max_step' for strategy react; run settings: "):
        agent_settings("react", max_step=3)
    assert agent_settings("react", "plain", max_steps=3, grounded=True).options.grounded is True


def test_a_strategy_refuses_options_of_another_strategy(tiny_index) -> None:
    with pytest.raises(ConfigError, match="strategy react takes ReActOptions, not VerifyOptions"):
        ReActAgent(ScriptedBackend([]), build_tools(tiny_index), None, None, VerifyOptions())
    with pytest.raises(ConfigError, match="strategy verify takes VerifyOptions, not ReActOptions"):
        AgentSettings("verify", options=ReActOptions())


# ---- a user's strategy with options of its own ----------------------------------------------------------------


@dataclass(frozen=True)
class PatientOptions(ReActOptions):
    """react's options and how long to wait."""

    patience: float = option(1.5, "Seconds to wait between steps.", low=0)
    notes: str | None = option(None, "A file of notes to read first.", kind="path")


class PatientAgent(ReActAgent):
    name = "patient"
    options_type = PatientOptions


@pytest.fixture
def patient():
    before, details = dict(AGENTS), dict(DETAILS)
    register_strategy(PatientAgent)
    yield
    AGENTS.clear()
    AGENTS.update(before)
    DETAILS.clear()
    DETAILS.update(details)


def test_a_users_strategy_declares_options_of_its_own(patient) -> None:
    settings = agent_settings("patient", options=parse_assignments(["patience=2", "notes=~/n.txt", "grounded=on"]))
    assert settings.options == PatientOptions(patience=2.0, notes="~/n.txt", grounded=True, **_answer_react_values())
    assert agent_settings("patient", options={"notes": ""}).options.notes is None
    with pytest.raises(ConfigError, match="option patience of strategy patient takes a number of at least 0, not 'x'"):
        agent_settings("patient", options={"patience": "x"})
    with pytest.raises(ConfigError, match="takes a number of at least 0, not nan"):
        agent_settings("patient", options={"patience": "nan"})


def _answer_react_values() -> dict[str, object]:
    react = option_infos(ReActOptions)
    return {key: value for key, value in ANSWER_NOW.items() if key in react and key != "grounded"}


# ---- profiles ------------------------------------------------------------------------------------------------


def test_the_answer_profile_is_what_the_commands_ran_before_and_the_defaults_changed_since() -> None:
    answer, plain = profile_named("answer"), profile_named("plain")
    assert (answer.agent, dict(answer.options)) == ("verify", ANSWER_NOW)
    assert (plain.agent, dict(plain.options)) == ("react", {})
    default = agent_settings()
    assert (default.agent, default.profile, default.config) == ("verify", "answer", RunConfig())
    assert default.options == VerifyOptions(**ANSWER_NOW)
    # react under the answer profile takes the values react has (verify's checks are not its to take)
    assert agent_settings("react").options == ReActOptions(**_answer_react_values(), grounded=True)
    # the plain profile is every option at its strategy's default
    for name, strategy in AGENTS.items():
        assert agent_settings(name, "plain").options == strategy.options_type()
    with pytest.raises(ConfigError, match=r"unknown profile 'fast'; choose from \['answer', 'plain'\]"):
        agent_settings(profile="fast")


def test_every_profile_value_is_an_option_of_the_profiles_strategy() -> None:
    for profile in PROFILES.values():
        assert set(profile.options) <= set(option_infos(agent_class(profile.agent).options_type)), profile.name


def command_context(command: str, args: list[str]):
    """The click context of `offline-agent COMMAND ARGS` as the CLI parses it."""
    import click

    from offline_agent.cli import _register
    from offline_agent.cli import cli as group

    _register()
    parent = click.Context(group, info_name="offline-agent", **group.context_settings)
    return group.commands[command].make_context(command, args, parent=parent)


@pytest.mark.parametrize("command", ["ask", "chat", "mcp", "eval"])
def test_the_commands_run_the_answer_profile_when_the_user_names_nothing(command: str, tmp_path: Path) -> None:
    from offline_agent.cli.options import run_choice
    from offline_agent.runner import corpus_scope

    args = {"ask": ["a question"], "eval": [str(tmp_path)]}.get(command, [])
    ctx = command_context(command, args)
    run = run_choice(ctx, dict(ctx.params), corpus=command in ("ask", "chat"))
    # ask and chat check the scope stored with the corpus (the sample corpus's); mcp and eval only a given one
    scope = corpus_scope(None) if command in ("ask", "chat") else None
    assert run.settings == agent_settings(scope=scope)


# ---- the command line ----------------------------------------------------------------------------------------


QUESTION = "Where was Marie Curie born?"


def ask_json(cli, scripted, tiny_corpus: Path, *args: str):  # noqa: F811
    scripted.enqueue("Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Warsaw")
    result = invoke(cli, "ask", QUESTION, "--corpus", str(tiny_corpus), "--scope", "", "--json", "-q", *args)
    return result, (json.loads(result.stdout) if result.exit_code in (0, 3) else None)


def test_o_sets_an_option_of_the_chosen_strategy(cli, scripted, tiny_corpus: Path) -> None:  # noqa: F811
    result, trajectory = ask_json(cli, scripted, tiny_corpus, "--agent", "verify", "-o", "read_hop=false")
    assert result.exit_code == 0, result.output
    assert trajectory["profile"] == "answer" and trajectory["agent"] == "verify"
    assert trajectory["options"] == {**VerifyOptions(**ANSWER_NOW).to_dict(), "read_hop": False}
    assert Trajectory.from_dict(trajectory).options["read_hop"] is False


def test_the_plain_profile_runs_react_with_every_default(cli, scripted, tiny_corpus: Path) -> None:  # noqa: F811
    result, trajectory = ask_json(cli, scripted, tiny_corpus, "--profile", "plain", "-o", "search_k=2")
    assert result.exit_code == 0, result.output
    assert trajectory["agent"] == "react" and trajectory["options"] == ReActOptions(search_k=2).to_dict()


def test_a_bad_option_on_the_command_line_is_a_usage_error(cli, scripted, tiny_corpus: Path) -> None:  # noqa: F811
    result = CliRunner().invoke(cli, ["ask", QUESTION, "-o", "read_hops=false"], prog_name="offline-agent")
    assert result.exit_code == 2 and not scripted.calls
    assert (
        "Error: unknown option 'read_hops' for strategy verify; choose from ['abstain', 'answer_form'" in result.output
    )
    result = CliRunner().invoke(cli, ["eval", "q.jsonl", "--agent", "plan", "-o", "min_searches=2"])
    assert result.exit_code == 2 and "unknown option 'min_searches' for strategy plan" in result.output


@pytest.mark.parametrize("order", [("--agent", "react", "--help-options"), ("--help-options", "--agent", "react")])
def test_help_options_shows_the_chosen_strategys_options(cli, order: tuple[str, ...]) -> None:  # noqa: F811
    result = invoke(cli, "ask", *order)  # no QUESTION needed
    assert result.exit_code == 0 and result.stdout.startswith("react: ")
    assert "search_k" in result.stdout and "read_hop" not in result.stdout
    assert "the answer column" in result.stdout  # the profile's values beside the defaults
    verify = invoke(cli, "eval", "--help-options").stdout  # the answer profile's strategy
    assert verify.startswith("verify: ") and "read_hop" in verify


def test_strategies_lists_every_strategy_its_options_and_the_profiles(cli) -> None:  # noqa: F811
    text = invoke(cli, "strategies").stdout
    for name, strategy in AGENTS.items():
        assert f"\n{name}: " in f"\n{text}"
        for key in option_infos(strategy.options_type):
            assert key in text
    assert "profiles (--profile):" in text and "answer (default)" in text and "plain: " in text
    data = json.loads(invoke(cli, "strategies", "--json").stdout)
    assert set(data["strategies"]) == set(AGENTS) and set(data["profiles"]) == set(PROFILES)
    react = {entry["key"]: entry for entry in data["strategies"]["react"]["options"]}
    assert react["search_k"] == {
        "key": "search_k",
        "type": "int",
        "default": 3,
        "help": "Passages per search.",
        "takes": "an int from 1 to 20",
    }


@pytest.mark.parametrize("command", ["ask", "chat", "mcp", "eval"])
def test_grammar_on_off_means_the_same_in_every_command(cli, command: str) -> None:  # noqa: F811
    text = invoke(cli, command, "-h").stdout
    assert "--grammar [on|off]" in text and "--no-grammar" not in text
    for old in legacy.old_flags():  # the old strategy flags are not options any more
        assert f"{old} " not in text and f"{old}/" not in text, old


# ---- the old flags -------------------------------------------------------------------------------------------


def test_old_flags_are_rewritten_to_their_new_form() -> None:
    notes: list[str] = []
    args = ["q", "--no-read-hop", "--search-k", "5", "--snippets=head", "--no-grammar", "--grounded", "--no-read-hop"]
    assert legacy.rewrite(args, out_short=False, note=notes.append) == [
        *("q", "-o", "read_hop=false", "-o", "search_k=5", "-o", "snippet=head", "--grammar", "off"),
        *("-o", "grounded=true", "-o", "read_hop=false"),
    ]
    assert notes == [
        "note: --no-read-hop is deprecated; use -o read_hop=false",
        "note: --search-k is deprecated; use -o search_k=5",
        "note: --snippets is deprecated; use -o snippet=head",
        "note: --no-grammar is deprecated; use --grammar off",
        "note: --grounded is deprecated; use -o grounded=true",
    ]
    assert legacy.rewrite(["-o", "runs/x", "-o", "a=b"], out_short=True, note=notes.append) == [
        *("--out", "runs/x", "-o", "a=b"),
    ]
    assert legacy.rewrite(["--", "--grounded"], out_short=False, note=notes.append) == ["--", "--grounded"]


def test_an_old_flag_still_runs_as_its_new_form(cli, scripted, tiny_corpus: Path) -> None:  # noqa: F811
    result, trajectory = ask_json(cli, scripted, tiny_corpus, "--no-read-hop", "--no-grammar", "--search-k", "2")
    assert result.exit_code == 0, result.output
    assert "note: --no-read-hop is deprecated; use -o read_hop=false" in result.stderr
    assert trajectory["options"]["read_hop"] is False and trajectory["options"]["search_k"] == 2
    assert scripted.calls[0].grammar is None  # --grammar off
    refused = CliRunner().invoke(cli, ["ask", QUESTION, "--agent", "react", "--read-hop"], prog_name="offline-agent")
    assert refused.exit_code == 2 and "unknown option 'read_hop' for strategy react" in refused.output


def test_the_docs_map_every_old_flag_to_its_new_form() -> None:
    text = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    for old in legacy.old_flags():
        assert f"| `{legacy.old_form(old)}` | `{legacy.new_form(old)}` |" in text, old
    assert "| `eval -o DIR` | `eval --out DIR` |" in text


# ---- what runs is recorded -----------------------------------------------------------------------------------


def test_every_trajectory_records_the_profile_and_the_options(tiny_index) -> None:
    settings = agent_settings("react", options={"search_k": 2}, max_steps=2)
    backend = ScriptedBackend(["Thought: a\nFinal: Warsaw"])
    session = Session.from_settings(settings, backend=backend, index=tiny_index, corpus="tiny")
    trajectory = session.ask(QUESTION, settings.config)
    assert trajectory.profile == "answer" and trajectory.options == settings.options.to_dict()
    assert trajectory.options["search_k"] == 2 and trajectory.max_steps == 2
    assert Trajectory.from_json(trajectory.to_json()) == trajectory
    plain = Session(backend=ScriptedBackend(["Thought: a\nFinal: x"]), index=tiny_index, corpus="tiny").ask("q")
    assert plain.profile == "plain" and plain.options == ReActOptions().to_dict()
