"""KnowAgent: the action graph file, the per-step grammar that enforces it, the retrieve tool, and scripted runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark
from support import cli_env, make_agent

from offline_agent.agents import AGENTS, KnowAgentOptions, ReActAgent, agent_class, agent_settings
from offline_agent.agents.action_graph import DEFAULT_GRAPH, START, load_action_graph
from offline_agent.agents.knowagent import KnowAgent
from offline_agent.backends import ScriptedBackend
from offline_agent.errors import ConfigError
from offline_agent.eval.runner import EvalOptions, run_evaluation
from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, build_grammar
from offline_agent.parse import StepParser, parser_for
from offline_agent.retrieval import BM25Index, Passage
from offline_agent.runner import Session, agent_tools
from offline_agent.steps import Completion
from offline_agent.tools import DEFAULT_TOOLS, build_tools
from offline_agent.tools.corpus import title_table

CALC_SCHEMA = {"type": "object", "properties": {"x": {"type": "string"}}}
DEFAULT_EDGES = {
    START: ("Search", "Retrieve"),
    "Search": ("Search", "Lookup", "Retrieve", "Finish"),
    "Retrieve": ("Search", "Lookup", "Finish"),
    "Lookup": ("Lookup", "Search", "Finish"),
}
# One valid step text per move, after "ActionPath: <last> -> ".
MOVE_TEXT = {
    "Search": "Search\nThought: x\nAction: search[Warsaw]\n",
    "Retrieve": "Retrieve\nThought: x\nAction: retrieve[Warsaw]\n",
    "Lookup": "Lookup\nThought: x\nAction: lookup[river]\n",
    "Finish": "Finish\nThought: x\nFinal: Vistula\n",
}


def make(index, outputs, agent: type[ReActAgent] = KnowAgent, **config) -> tuple[KnowAgent, ScriptedBackend]:
    backend = ScriptedBackend(outputs)
    return make_agent(agent, backend, build_tools(index, agent_tools(agent)), **config), backend


def write_graph(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "graph.toml"
    path.write_text(text, encoding="utf-8")
    return path


# ---- the graph file --------------------------------------------------------------------------------------------


def test_the_shipped_graph() -> None:
    graph = load_action_graph()
    assert dict(graph.edges) == DEFAULT_EDGES
    assert dict(graph.tools) == {"Search": "search", "Retrieve": "retrieve", "Lookup": "lookup", "Finish": "Final"}
    assert graph.final_actions == ("Finish",) and graph.tool_names == ("search", "retrieve", "lookup")
    assert graph.describe().splitlines()[0] == "- At the start: Search or Retrieve."
    assert "- After Lookup: Lookup, Search or Finish." in graph.describe()


GOOD_ACTIONS = '[actions]\nSearch = "search"\nFinish = "Final"\n'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[actions\n", "not valid TOML"),
        ('[edges]\nStart = ["Search"]\n', "no [actions] table"),
        (GOOD_ACTIONS, "no [edges] table"),
        (GOOD_ACTIONS + '[edges]\nStart = ["Search"]\nSearch = ["Lookup", "Finish"]\n', "unknown action 'Lookup'"),
        (GOOD_ACTIONS + '[edges]\nStart = ["Search"]\nSearch = ["Finish"]\nLookup = ["Finish"]\n', "unknown action"),
        ('[actions]\nSearch = ""\nFinish = "Final"\n[edges]\nStart = ["Search"]\n', "action 'Search' has no tool"),
        ('[actions]\nSearch = "search"\n[edges]\nStart = ["Search"]\nSearch = ["Search"]\n', "no action gives the"),
        (GOOD_ACTIONS + '[edges]\nStart = ["Search"]\nSearch = ["Search"]\n', "no path from Start reaches Finish"),
        (GOOD_ACTIONS + '[edges]\nStart = []\nSearch = ["Finish"]\n', "no edges from Start"),
        (GOOD_ACTIONS + '[edges]\nSearch = ["Finish"]\n', "no edges from Start"),
        (GOOD_ACTIONS + '[edges]\nStart = ["Search"]\n', "action 'Search' has no edges"),
        (GOOD_ACTIONS + '[edges]\nStart = ["Finish"]\nSearch = ["Finish"]\nFinish = ["Search"]\n', "ends the run"),
        ('[actions]\nStart = "search"\nFinish = "Final"\n[edges]\nStart = ["Finish"]\n', "where every run begins"),
        ('[actions]\n"Two words" = "search"\nFinish = "Final"\n[edges]\nStart = ["Finish"]\n', "bad action name"),
        (GOOD_ACTIONS + '[edges]\nStart = "Search"\n', "must be a list"),
        (GOOD_ACTIONS + '[edges]\nStart = ["Search"]\nSearch = ["Finish"]\n[extra]\n', "unknown table 'extra'"),
    ],
)
def test_bad_graphs_are_refused_in_one_line(tmp_path: Path, text: str, problem: str) -> None:
    path = write_graph(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_action_graph(path)
    message = str(caught.value)
    assert message.startswith(f"action graph {path}: ") and problem in message and "\n" not in message


def test_missing_graph_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"action graph .*nowhere\.toml: cannot read it"):
        load_action_graph(tmp_path / "nowhere.toml")


def test_a_graph_whose_tool_the_run_lacks(tiny_index, tmp_path: Path) -> None:
    path = write_graph(
        tmp_path, '[actions]\nWeb = "browse"\nFinish = "Final"\n[edges]\nStart = ["Web", "Finish"]\nWeb = ["Finish"]\n'
    )
    with pytest.raises(ConfigError, match=r"action 'Web' calls 'browse', which this run does not have"):
        make(tiny_index, [], action_graph=str(path))


def test_a_registry_without_retrieve_gets_one_over_its_corpus_session(tiny_index) -> None:
    backend = ScriptedBackend(
        [
            "ActionPath: Start -> Retrieve\nThought: x\nAction: retrieve[Marie Curie]\n",
            "ActionPath: Retrieve -> Lookup\nThought: x\nAction: lookup[Nobel]\n",
            "ActionPath: Lookup -> Finish\nThought: x\nFinal: 1903",
        ]
    )
    agent = KnowAgent(backend, build_tools(tiny_index))  # the default tools: search, lookup, calculator
    assert agent.tools.names == ["search", "retrieve", "lookup"]
    steps = agent.run("q").steps
    assert steps[1].observation.startswith("(Result 1 / 1) She won the Nobel Prize")


def test_action_graph_goes_with_knowagent_only(tmp_path: Path) -> None:
    assert AGENTS["knowagent"] is KnowAgent and agent_class("knowagent").required_tools == ("retrieve",)
    assert agent_settings("knowagent").options.action_graph is None
    with pytest.raises(ConfigError, match="unknown option 'action_graph' for strategy react; choose from"):
        agent_settings("react", options={"action_graph": "graph.toml"})
    with pytest.raises(ConfigError, match="cannot read it"):
        KnowAgentOptions(action_graph=str(tmp_path / "missing.toml"))


# ---- the grammar of each state -----------------------------------------------------------------------------------


@pytest.mark.parametrize("last", list(DEFAULT_EDGES))
def test_each_state_allows_exactly_the_graphs_moves(tiny_index, last: str) -> None:
    agent, _ = make(tiny_index, [])
    spec = agent.move_spec((START, last) if last != START else (START,), final_only=False)
    grammar = build_grammar(spec)
    checker, parser = GbnfChecker(grammar.gbnf), StepParser(spec)
    for move, text in MOVE_TEXT.items():
        step = f"ActionPath: {last} -> {text}"
        allowed = move in DEFAULT_EDGES[last]
        assert checker.accepts(step) is allowed, step
        assert parser.accepts(step) is allowed, step
        if allowed:
            assert parser.parse(step).path == (last, move)


def test_a_move_and_its_tool_line_always_agree(tiny_index) -> None:
    agent, _ = make(tiny_index, [])
    spec = agent.move_spec((START, "Search"), final_only=False)
    checker, parser = GbnfChecker(build_grammar(spec).gbnf), StepParser(spec)
    for text in [
        "ActionPath: Search -> Lookup\nThought: x\nAction: search[Warsaw]\n",
        "ActionPath: Search -> Search\nThought: x\nFinal: Warsaw\n",
        "ActionPath: Search -> Finish\nThought: x\nAction: lookup[river]\n",
        "ActionPath: Start -> Search -> Lookup\nThought: x\nAction: lookup[river]\n",  # not the path the grammar writes
        "Thought: x\nAction: lookup[river]\n",
    ]:
        assert not checker.accepts(text) and not parser.accepts(text), text
    assert checker.is_prefix("ActionPath: Search -> Lo") and checker.is_prefix("ActionPath: Search -> ")
    assert not checker.is_prefix("ActionPath: Search -> Start")


def test_the_last_step_offers_finish_only(tiny_index) -> None:
    agent, backend = make(
        tiny_index, ["ActionPath: Start -> Finish\nThought: no steps left.\nFinal: unknown"], max_steps=1
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "unknown"
    step = trajectory.steps[0]
    assert step.final_only and step.details.allowed == ["Finish"]
    assert step.details.action_path == [START, "Finish"]
    checker = GbnfChecker(backend.calls[0].grammar)
    assert checker.accepts("ActionPath: Start -> Finish\nThought: x\nFinal: y")
    assert not checker.accepts("ActionPath: Start -> Search\nThought: x\nAction: search[y]")


PATH_SPEC = GrammarSpec(
    tools=(ToolSpec("search"), ToolSpec("lookup"), ToolSpec("calc", schema=CALC_SCHEMA)),
    action_path=(START, "Search"),
    next_actions=(("Lookup", "lookup"), ("Compute", "calc"), ("Finish", "Final")),
    thought_max=6,
    argument_max=4,
    final_max=3,
    string_max=3,
)
PATH_CHECKER = GbnfChecker(build_grammar(PATH_SPEC).gbnf)
PATH_PARSER = StepParser(PATH_SPEC)


def test_strings_generated_from_the_lark_side_are_accepted_by_the_gbnf() -> None:
    lark = Lark(build_grammar(PATH_SPEC).lark, parser="lalr", lexer="contextual")

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(from_lark(lark, start="start"))
    def check(text: str) -> None:
        assert PATH_CHECKER.accepts(text), repr(text)
        step = PATH_PARSER.parse(text)
        assert step.path is not None and step.path[:2] == (START, "Search")
        assert step.is_final == (step.path[-1] == "Finish")

    check()


_PIECES = st.sampled_from(
    [
        "ActionPath: ",
        "Start -> ",
        "Search -> ",
        "Start",
        "Search",
        "Lookup",
        "Compute",
        "Finish",
        " -> ",
        "Thought: ",
        "Action: ",
        "Final: ",
        "lookup[",
        "search[",
        'calc[{"x": ',
        "}",
        '"',
        "]",
        "\n",
        "\n\n",
        " ",
        "ab",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_gbnf_and_lark_agree_on_arbitrary_path_steps(text: str) -> None:
    assert PATH_CHECKER.accepts(text) == PATH_PARSER.accepts(text), text


def test_spec_checks_its_moves() -> None:
    tools = (ToolSpec("search"),)
    with pytest.raises(ConfigError, match="needs an action_path"):
        GrammarSpec(tools=tools, next_actions=(("Search", "search"),))
    with pytest.raises(ConfigError, match="at least one allowed next action"):
        GrammarSpec(tools=tools, action_path=(START,))
    with pytest.raises(ConfigError, match="calls 'lookup', which this step cannot call"):
        GrammarSpec(tools=tools, action_path=(START,), next_actions=(("Lookup", "lookup"),))
    with pytest.raises(ConfigError, match="bad action name"):
        GrammarSpec(tools=tools, action_path=("Start here",), next_actions=(("Search", "search"),))
    spec = GrammarSpec(tools=tools, action_path=(START,), next_actions=(("Search", "search"), ("Finish", "Final")))
    assert spec.final_only().next_actions == (("Finish", "Final"),) and spec.final_only().action_path == (START,)
    with pytest.raises(ConfigError, match="at least one allowed next action"):
        GrammarSpec(tools=tools, action_path=(START,), next_actions=(("Search", "search"),)).final_only()


def test_two_moves_may_share_a_tool() -> None:
    tools = (ToolSpec("search"),)
    spec = GrammarSpec(
        tools=tools, action_path=(START,), next_actions=(("Broad", "search"), ("Narrow", "search"), ("Done", "Final"))
    )
    grammar = build_grammar(spec)
    assert grammar.gbnf.count("call-search ::=") == 1 and grammar.lark.count("call_search:") == 1
    parser = StepParser(spec)
    assert parser.parse("ActionPath: Start -> Narrow\nThought: x\nAction: search[y]").path == (START, "Narrow")


# ---- runs ----------------------------------------------------------------------------------------------------------


def test_a_run_start_search_lookup_finish(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "ActionPath: Start -> Search\nThought: Marie Curie first.\nAction: search[Marie Curie]\n",
            "ActionPath: Search -> Lookup\nThought: Her birthplace.\nAction: lookup[born]\n",
            "ActionPath: Lookup -> Finish\nThought: She was born in Warsaw.\nFinal: Warsaw",
        ],
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.agent == "knowagent" and trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    paths = [step.details.action_path for step in trajectory.steps]
    assert paths == [[START, "Search"], [START, "Search", "Lookup"], [START, "Search", "Lookup", "Finish"]]
    assert [step.details.allowed for step in trajectory.steps] == [
        list(DEFAULT_EDGES[START]),
        list(DEFAULT_EDGES["Search"]),
        list(DEFAULT_EDGES["Lookup"]),
    ]
    assert trajectory.steps[0].details.seen_titles[0] == "Marie Curie"
    assert "born in Warsaw" in trajectory.steps[1].observation
    # each step's grammar writes the last action, then offers only its successors
    firsts = [call.grammar.splitlines()[0] for call in backend.calls]
    assert firsts[0].startswith('root ::= "ActionPath: Start -> "') and "move-3" not in firsts[0]
    assert firsts[2].startswith('root ::= "ActionPath: Lookup -> "')
    system = backend.calls[0].prompt
    assert "- At the start: Search or Retrieve." in system and "retrieve[" in system and "calculator" not in system
    assert "{actions}" not in system and "{action_graph}" not in system and "$" not in system


def test_a_grounded_run_answers_from_what_it_read(tiny_index) -> None:
    # Grounded, the Finish move's answer is a span of what the run has read: not only yes or no, and not a word
    # it never saw (the grammar used to offer yes/no alone, which the parser then refused on an open question).
    agent, backend = make(
        tiny_index,
        [
            "ActionPath: Start -> Search\nThought: Marie Curie first.\nAction: search[Marie Curie]\n",
            "ActionPath: Search -> Finish\nThought: She was born in Warsaw.\nFinal: Warsaw",
        ],
        grounded=True,
        answer_form=True,
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    assert not any(step.parse_error for step in trajectory.steps)
    checker = GbnfChecker(backend.calls[1].grammar)
    assert checker.accepts("ActionPath: Search -> Finish\nThought: x\nFinal: Warsaw")
    assert checker.accepts("ActionPath: Search -> Finish\nThought: x\nFinal: Marie Curie")
    assert not checker.accepts("ActionPath: Search -> Finish\nThought: x\nFinal: No")
    assert not checker.accepts("ActionPath: Search -> Finish\nThought: x\nFinal: Krakow")
    assert checker.accepts("ActionPath: Search -> Lookup\nThought: x\nAction: lookup[born]\n")


def test_a_grounded_run_that_has_read_nothing_is_not_offered_finish(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "ActionPath: Start -> Search\nThought: look.\nAction: search[zzzqqq]\n",
            "ActionPath: Search -> Search\nThought: again.\nAction: search[xxxyyy]\n",
            "ActionPath: Search -> Finish\nThought: no steps left.\nFinal: somewhere",
        ],
        grounded=True,
        answer_form=True,
        max_steps=3,
    )
    trajectory = agent.run("Where was Marie Curie born?")
    # nothing found, so nothing an answer could be: Finish is not offered until the last step, whose answer is free
    assert trajectory.steps[1].details.allowed == ["Search", "Lookup", "Retrieve"]
    assert not GbnfChecker(backend.calls[1].grammar).accepts("ActionPath: Search -> Finish\nThought: x\nFinal: y")
    assert trajectory.steps[2].final_only and trajectory.steps[2].details.allowed == ["Finish"]
    assert trajectory.stop_reason == "final" and trajectory.answer == "somewhere"


def test_retrieve_then_lookup_reads_the_retrieved_page(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        [
            "ActionPath: Start -> Retrieve\nThought: x\nAction: retrieve[pierre curie]\n",
            "ActionPath: Retrieve -> Lookup\nThought: x\nAction: lookup[born]\n",
            "ActionPath: Lookup -> Finish\nThought: x\nFinal: Paris",
        ],
    )
    steps = agent.run("Where was Pierre Curie born?").steps
    assert steps[0].observation.startswith("Pierre Curie: Pierre Curie was a French physicist")
    assert steps[0].details.seen_titles == ["Pierre Curie"] and steps[0].details.tool.match == "exact"
    assert steps[1].observation.startswith("(Result 1 / 1) Pierre Curie was a French physicist born in Paris")


def test_without_the_grammar_an_invalid_move_is_recorded(tiny_index) -> None:
    agent, _ = make(
        tiny_index,
        [
            "ActionPath: Start -> Search\nThought: x\nAction: search[Marie Curie]\n",
            "ActionPath: Search -> Lookup\nThought: x\nAction: lookup[born]\n",
            "ActionPath: Lookup -> Retrieve\nThought: x\nAction: retrieve[Warsaw]\n",
        ],
        grammar=False,
    )
    trajectory = agent.run("Which river flows through Warsaw?")
    assert trajectory.stop_reason == "error" and trajectory.answer is None and len(trajectory.steps) == 3
    error = trajectory.steps[2].parse_error
    assert error["label"] == "invalid_move" and "Lookup, Search, Finish" in error["message"]
    assert trajectory.error.startswith("step 3: ")
    assert trajectory.steps[2].details.action_path == [START, "Search", "Lookup"]  # the move was not made


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("ActionPath: Start -> Search -> Lookup\nThought: x\nAction: lookup[born]", "invalid_move"),  # wrong path
        ("ActionPath: Start -> Search\nThought: x\nAction: lookup[born]", "invalid_move"),  # tool of another move
        ("ActionPath: Start -> Search\nThought: x\nFinal: Warsaw", "invalid_move"),
        ("Thought: x\nAction: search[Warsaw]", "missing_path"),
        ("ActionPath: Start -> Search\nAction: search[Warsaw]", "missing_thought"),
    ],
)
def test_without_the_grammar_labels(tiny_index, text: str, label: str) -> None:
    agent, _ = make(tiny_index, [text], grammar=False)
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "error" and trajectory.steps[0].parse_error["label"] == label


def test_the_loop_checks_the_parsed_path_again(tiny_index) -> None:
    class Swapped(KnowAgent):  # a grammar of another state than the real one: the loop still refuses the move
        def step_grammar(self, state, index, final_only):
            parser = parser_for(self.move_spec((START, "Search"), final_only))
            return parser.grammar, parser

    agent, _ = make(
        tiny_index,
        [
            "ActionPath: Search -> Lookup\nThought: x\nAction: lookup[born]",
        ],
        agent=Swapped,
    )
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "error" and trajectory.steps[0].parse_error["label"] == "invalid_move"
    assert trajectory.error == "step 1: the ActionPath says Search, but the path so far is Start"


def test_prevented_moves_are_counted(tiny_index) -> None:
    prefix = len("ActionPath: Start -> ")
    text = "ActionPath: Start -> Search\nThought: x\nAction: search[Marie Curie]\n"
    rejections = [
        (prefix, "Lookup"),  # a move the graph forbids after Start
        (prefix - 1, " Finish"),  # the same, in a token that carries the space before the name
        (prefix, " "),  # a format refusal, not a move
        (prefix + 8, "Lookup"),  # later in the text: not the move
    ]
    agent, _ = make(
        tiny_index, [Completion(text, rejections=rejections), "ActionPath: Search -> Finish\nThought: x\nFinal: Warsaw"]
    )
    steps = agent.run("q").steps
    assert steps[0].details.prevented == 2 and steps[1].details.prevented == 0
    assert len(steps[0].details.rejections) == 4


def test_the_whole_path_when_the_window_is_open(tiny_index) -> None:
    class WholePath(KnowAgent):
        path_window = None

    agent, backend = make(
        tiny_index,
        [
            "ActionPath: Start -> Search\nThought: x\nAction: search[Marie Curie]\n",
            "ActionPath: Start -> Search -> Finish\nThought: x\nFinal: Warsaw",
        ],
        agent=WholePath,
    )
    trajectory = agent.run("q")
    assert trajectory.answer == "Warsaw"
    assert backend.calls[1].grammar.startswith('root ::= "ActionPath: Start -> Search -> "')
    assert agent.grammar_sha256 != make(tiny_index, [])[0].grammar_sha256


def test_a_graph_of_ones_own(tiny_index, tmp_path: Path) -> None:
    path = write_graph(
        tmp_path,
        '[actions]\nFind = "search"\nAnswer = "Final"\n[edges]\nStart = ["Find"]\nFind = ["Answer"]\n',
    )
    agent, backend = make(
        tiny_index,
        [
            "ActionPath: Start -> Find\nThought: x\nAction: search[Warsaw]\n",
            "ActionPath: Find -> Answer\nThought: x\nFinal: Poland",
        ],
        action_graph=str(path),
    )
    trajectory = agent.run("Which country has Warsaw as its capital?")
    assert trajectory.answer == "Poland" and agent.tools.names == ["search"]
    actions = backend.calls[0].prompt.split("Actions:\n", 1)[1].split("\n\n", 1)[0]
    assert actions.startswith("- Find: search[") and "retrieve" not in actions and "- Answer: Final:" in actions


def test_session_adds_the_tools_the_agent_needs(tiny_index) -> None:
    assert agent_tools("react") == DEFAULT_TOOLS
    assert agent_tools("knowagent") == (*DEFAULT_TOOLS, "retrieve")
    assert agent_tools(KnowAgent, ("retrieve", "search")) == ("retrieve", "search")
    backend = ScriptedBackend(
        [
            "ActionPath: Start -> Retrieve\nThought: x\nAction: retrieve[Warsaw]\n",
            "ActionPath: Retrieve -> Finish\nThought: x\nFinal: Poland",
        ]
    )
    trajectory = Session(backend=backend, index=tiny_index, corpus="tiny", agent="knowagent").ask("q")
    assert trajectory.answer == "Poland" and trajectory.steps[0].details.seen_titles == ["Warsaw"]


def test_an_evaluation_records_the_graph_and_reads_retrieved_titles(tiny_corpus: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    row = {
        "id": "q1",
        "question": "Where was Marie Curie born?",
        "answer": "Warsaw",
        "supporting_titles": ["Marie Curie"],
    }
    questions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    graph = write_graph(tmp_path, DEFAULT_GRAPH.read_text(encoding="utf-8"))
    backend = ScriptedBackend(
        [
            "ActionPath: Start -> Retrieve\nThought: x\nAction: retrieve[Marie Curie]\n",
            "ActionPath: Retrieve -> Finish\nThought: x\nFinal: Warsaw",
        ]
    )
    settings = agent_settings("knowagent", action_graph=str(graph))
    options = EvalOptions(dataset=questions, pool=tiny_corpus, out=tmp_path / "run", settings=settings)
    summary = run_evaluation(options, backend=backend)
    assert summary["em"] == 1.0 and summary["support_recall"] == 1.0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["agent_config"]["action_graph"] == str(graph) and "retrieve" in config["tools"]


# ---- the retrieve tool -----------------------------------------------------------------------------------------


@pytest.fixture
def titled_index():
    docs = [
        ("a", "Ed Wood", "Ed Wood was a film director."),
        ("b", "Ed Wood (film)", "A 1994 film about Ed Wood."),
        ("c", "Wood", "Wood is a material."),
        ("d", "The Who", "The Who are a rock band."),
        ("e", "Glass", "Glass is a material too."),
    ]
    return BM25Index.build(
        [Passage(i, key, title, text, "t", 0, len(text)) for i, (key, title, text) in enumerate(docs)]
    )


@pytest.mark.parametrize(
    ("entity", "title", "match"),
    [
        ("Ed Wood", "Ed Wood", "exact"),
        ("  ed   WOOD ", "Ed Wood", "exact"),
        ("the who", "The Who", "exact"),  # only stopwords: found by the exact title alone
        ("Ed Wood film", "Ed Wood (film)", "closest"),
        ("wood", "Wood", "exact"),
        ("Edward Wood", "Wood", "closest"),  # the shortest title holding the shared term
    ],
)
def test_retrieve_matches_titles(titled_index, entity: str, title: str, match: str) -> None:
    tools = build_tools(titled_index, ("retrieve", "lookup"))
    result = tools.run("retrieve", entity)
    details = tools.get("retrieve").last_details
    assert not result.is_error and result.observation.startswith(f"{title}: ")
    assert details["titles"] == [title] and details["match"] == match and len(details["ids"]) == 1
    assert tools.get("lookup").session.document_title == title  # lookup now reads the retrieved document


def test_retrieve_when_nothing_matches(titled_index) -> None:
    tools = build_tools(titled_index, ("retrieve",))
    result = tools.run("retrieve", "Kessa Harbour")
    assert not result.is_error and result.observation.startswith("No document title matches 'Kessa Harbour'")
    assert tools.get("retrieve").last_details["titles"] == []
    assert tools.run("retrieve", "  ").is_error


def test_retrieve_ties_go_to_the_lowest_passage_id() -> None:
    docs = [("b", "Curie Street", "x"), ("a", "Curie Avenue", "y"), ("c", "Curie Street", "z")]
    index = BM25Index.build([Passage(i, key, title, text, "t", 0, 1) for i, (key, title, text) in enumerate(docs)])
    tools = build_tools(index, ("retrieve",))
    tools.run("retrieve", "curie")
    assert tools.get("retrieve").last_details["ids"] == [0]
    tools.run("retrieve", "curie street")
    assert tools.get("retrieve").last_details["ids"] == [0]


def test_the_title_table_is_built_once_per_index(titled_index) -> None:
    first = title_table(titled_index)
    assert title_table(titled_index) is first and len(first) == 5
    assert first.best("glass")[2] == "exact" and first._bm25 is None  # the title BM25 waits for a first miss
    assert first.best("glass material")[2] == "closest" and first._bm25 is not None
    titled_index.add([Passage(0, "f", "Kessa Harbour", "A harbour.", "t", 0, 10)])
    second = title_table(titled_index)
    assert second is not first and len(second) == 6
    tools = build_tools(titled_index, ("retrieve",))
    assert tools.run("retrieve", "kessa harbour").observation.startswith("Kessa Harbour: ")


def test_retrieve_needs_a_corpus() -> None:
    with pytest.raises(ConfigError, match="need a corpus"):
        build_tools(None, ("retrieve",))


# ---- the command line ------------------------------------------------------------------------------------------


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", *args],
        capture_output=True,
        text=True,
        env=cli_env(home),
        timeout=120,
    )


def test_cli_refuses_a_graph_before_loading_a_model(isolated_home: Path, tmp_path: Path) -> None:
    bad = write_graph(tmp_path, GOOD_ACTIONS + '[edges]\nStart = ["Search"]\nSearch = ["Search"]\n')
    for args, needle in [
        (
            ["ask", "q", "--agent", "react", "-o", f"action_graph={bad}"],
            "unknown option 'action_graph' for strategy react",
        ),
        (["ask", "q", "--agent", "knowagent", "-o", f"action_graph={bad}"], f"action graph {bad}: no path from Start"),
        (["ask", "q", "--agent", "knowagent", "--action-graph", str(bad)], f"action graph {bad}: no path from Start"),
    ]:
        result = run_cli(*args, home=isolated_home)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and needle in errors[0], result.stderr
    listing = run_cli("ask", "--agent", "knowagent", "--help-options", home=isolated_home).stdout
    assert "action_graph" in listing and "path" in listing
