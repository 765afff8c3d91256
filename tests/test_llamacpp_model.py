"""The real llama.cpp backend with the small test model (SmolLM2-135M), loaded once per session.

These run in CI: the grammar must hold on real sampled output, the cache must be reused across steps, and a
whole `ask` must work from the command line, also with no network at all.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, cli_env

from offline_agent.agents import ReActAgent, RunConfig
from offline_agent.backends import ScriptedBackend
from offline_agent.backends.base import aside
from offline_agent.errors import ContextOverflowError, ModelError
from offline_agent.grammar import GbnfChecker
from offline_agent.parse import StepParser
from offline_agent.steps import STOP_REASONS, Trajectory
from offline_agent.tools import build_tools

pytestmark = pytest.mark.model

QUESTIONS = [json.loads(line)["question"] for line in (ROOT / "corpora/sample/questions.jsonl").open()][:5]


@pytest.fixture(scope="module")
def sample_index():
    from offline_agent.retrieval import open_corpus

    return open_corpus(ROOT / "corpora" / "sample" / "docs")


def agent_prompts(backend, index) -> list[tuple[ReActAgent, str]]:
    """The agent's real prompts: the first step of several questions, and a later step after an Observation."""
    prompts = []
    for question in QUESTIONS:
        agent = ReActAgent(backend, build_tools(index))
        prompts.append((agent, agent.prompt_prefix(agent.prompt_parts(question))))
    # A second-step prompt, with a real Observation in the scratchpad (the first step scripted).
    scripted = ScriptedBackend(
        [f"Thought: I search first.\nAction: search[{QUESTIONS[0][:40]}]", "Thought: x\nFinal: x"]
    )
    scripted.chat_template = backend.chat_template
    first = ReActAgent(scripted, build_tools(index)).run(QUESTIONS[0])
    agent = ReActAgent(backend, build_tools(index))
    prefix = agent.prompt_prefix(agent.prompt_parts(QUESTIONS[0]))
    prompts.append((agent, prefix + f"{first.steps[0].raw}\nObservation: {first.steps[0].observation}\n"))
    return prompts


def test_fifty_constrained_generations_at_high_temperature_all_parse(small_backend, sample_index) -> None:
    prompts = agent_prompts(small_backend, sample_index)
    checker = GbnfChecker(prompts[0][0].grammar.gbnf)
    outcomes = []
    for i in range(50):
        agent, prompt = prompts[i * len(prompts) // 50]  # consecutive calls share a prompt: its cache is reused
        completion = small_backend.complete(
            prompt, grammar=agent.grammar.gbnf, max_tokens=256, temperature=1.0, seed=1000 + i
        )
        assert completion.finish_reason == "stop", completion
        step = StepParser(agent.spec).parse(completion.text)  # raises on any format error
        assert checker.accepts(completion.text)
        outcomes.append("final" if step.is_final else step.action.tool)
    assert len(outcomes) == 50


def test_final_only_grammar_forces_an_answer(small_backend, sample_index) -> None:
    agent, prompt = agent_prompts(small_backend, sample_index)[-1]
    for seed in range(5):
        completion = small_backend.complete(
            prompt, grammar=agent.final_grammar.gbnf, max_tokens=256, temperature=1.0, seed=seed
        )
        assert StepParser(agent.spec.final_only()).parse(completion.text).is_final


def test_same_seed_same_text(small_backend, sample_index) -> None:
    agent, prompt = agent_prompts(small_backend, sample_index)[0]
    runs = [
        small_backend.complete(prompt, grammar=agent.grammar.gbnf, max_tokens=128, temperature=0.8, seed=42).text
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_growing_prompt_reuses_the_cache(small_backend, sample_index) -> None:
    agent, prompt = agent_prompts(small_backend, sample_index)[0]
    first = small_backend.complete(prompt, grammar=agent.grammar.gbnf, max_tokens=128)
    longer = prompt + first.text.rstrip("\n") + "\nObservation: nothing found.\n"
    second = small_backend.complete(longer, grammar=agent.grammar.gbnf, max_tokens=128)
    assert second.usage.cached_tokens >= first.usage.prompt_tokens - 1
    assert second.usage.evaluated_tokens < 40
    assert first.usage.generated_tokens > 0 and first.timings.generate_s > 0


def test_a_call_aside_leaves_the_cache_of_the_run_as_it_was(small_backend, sample_index) -> None:
    agent, prompt = agent_prompts(small_backend, sample_index)[0]
    first = small_backend.complete(prompt, grammar=agent.grammar.gbnf, max_tokens=64)
    longer = prompt + first.text.rstrip("\n") + "\nObservation: nothing found.\n"
    plain = small_backend.complete(longer, grammar=agent.grammar.gbnf, max_tokens=64)
    small_backend.complete(prompt, grammar=agent.grammar.gbnf, max_tokens=64)
    with aside(small_backend):
        side = small_backend.complete("Is the sky green? Reply yes or no.", grammar='root ::= "yes" | "no"\n')
    assert side.text in ("yes", "no") and side.usage.cached_tokens == 0
    after = small_backend.complete(longer, grammar=agent.grammar.gbnf, max_tokens=64)
    assert after.usage.cached_tokens >= first.usage.prompt_tokens - 1  # the side call evicted nothing
    assert after.text == plain.text


def test_stop_strings_cut_unconstrained_text(small_backend, sample_index) -> None:
    agent, prompt = agent_prompts(small_backend, sample_index)[0]
    completion = small_backend.complete(prompt, max_tokens=48, stop=["\n"], temperature=0.0)
    assert "\n" not in completion.text


def test_context_overflow_is_reported(small_model_path: Path) -> None:
    from offline_agent.backends.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend(small_model_path, context_size=512)
    with pytest.raises(ContextOverflowError):
        backend.complete("word " * 600, max_tokens=16)


def test_agent_run_ends_with_a_stop_reason(small_backend, sample_index) -> None:
    agent = ReActAgent(small_backend, build_tools(sample_index), RunConfig(max_steps=4, temperature=0.0))
    trajectory = agent.run(QUESTIONS[0])
    assert trajectory.stop_reason in STOP_REASONS
    assert all(step.parse_error is None for step in trajectory.steps if step.final or step.action)
    assert Trajectory.from_json(trajectory.to_json()) == trajectory
    # Cache reuse is checked in test_growing_prompt_reuses_the_cache. Here, after this module's earlier tests,
    # llama.cpp refuses the cut-back cache of step 2 (llama_decode -1) and the backend re-evaluates the whole
    # prompt; the run stays correct. Left open in the grammar-speed issue's note.


def test_corrupt_gguf_is_a_model_error(tmp_path: Path) -> None:
    from offline_agent.backends.llamacpp import LlamaCppBackend

    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    with pytest.raises(ModelError):
        LlamaCppBackend(corrupt)


def _ask(*prefix: str, home: Path, trace: Path) -> subprocess.CompletedProcess[str]:
    command = [
        *prefix,
        sys.executable,
        "-m",
        "offline_agent.cli",
        "ask",
        QUESTIONS[2],
        "--model",
        "smollm2-135m-instruct",
        "--max-steps",
        "4",
        "--json",
        "--trace",
        str(trace),
    ]
    return subprocess.run(command, capture_output=True, text=True, env=cli_env(home), timeout=600)


def check_trajectory_output(result: subprocess.CompletedProcess[str], trace: Path) -> None:
    assert result.returncode in (0, 3), result.stderr
    assert "Traceback" not in result.stderr
    data = json.loads(result.stdout)
    trajectory = Trajectory.from_dict(data)
    assert trajectory.stop_reason in STOP_REASONS and trajectory.steps
    assert trajectory.model["sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert len(trajectory.grammar_sha256) == 64 and len(trajectory.prompt_sha256) == 64
    assert trajectory.corpus and trajectory.corpus.endswith("docs")
    assert "── step 1" in result.stderr and "Thought:" in result.stderr
    lines = trace.read_text().splitlines()
    assert Trajectory.from_json(lines[-1]) == trajectory


def test_ask_on_the_sample_corpus(tmp_path: Path) -> None:
    check_trajectory_output(_ask(home=tmp_path / "home", trace=tmp_path / "trace.jsonl"), tmp_path / "trace.jsonl")


def test_ask_works_without_network(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to check that ask runs without network")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"this sandbox does not allow network namespaces: {probe.stderr.decode().strip()}")
    check_trajectory_output(
        _ask("unshare", "-n", home=tmp_path / "home", trace=tmp_path / "trace.jsonl"),
        tmp_path / "trace.jsonl",
    )


# --- grammar engines (fast llguidance path against llama.cpp's grammar= sampler) ---------------------------------


@pytest.fixture(scope="module")
def reference_backend(small_model_path: Path):
    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(small_model_path, grammar_engine="llama.cpp")


@pytest.fixture(scope="module")
def stepwise_backend(small_model_path: Path):
    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(small_model_path, jump_forward=False)


def test_fast_engine_is_greedy_on_the_masked_logits_like_llama_grammar(
    reference_backend, stepwise_backend, small_backend, sample_index
) -> None:
    """At temperature 0 both engines take the best token the grammar allows. They agree token for token until
    llama.cpp's grammar sampler spells a literal in shorter tokens than the best-scoring allowed one (seen: "F" +
    "in" + "al" where "Final" scored higher); there the fast engine's token must score at least as high."""
    import llama_cpp

    agreed = diverged = 0
    for agent, prompt in agent_prompts(small_backend, sample_index):
        for grammar in (agent.grammar.gbnf, agent.final_grammar.gbnf):
            expected = reference_backend.complete(prompt, grammar=grammar, max_tokens=200)
            fast = stepwise_backend.complete(prompt, grammar=grammar, max_tokens=200)
            common = 0
            for a, b in zip(fast.tokens, expected.tokens, strict=False):
                if a != b:
                    break
                common += 1
            if common == len(fast.tokens) == len(expected.tokens):
                assert fast.text == expected.text
                agreed += 1
                continue
            diverged += 1
            llm = stepwise_backend.llm
            llm.reset()
            llm.eval(stepwise_backend.tokenize(prompt, prompt=True) + fast.tokens[:common])
            logits = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            assert logits[fast.tokens[common]] >= logits[expected.tokens[common]], (fast.text, expected.text)
            spec = agent.spec if grammar == agent.grammar.gbnf else agent.spec.final_only()
            StepParser(spec).parse(small_backend.complete(prompt, grammar=grammar, max_tokens=200).text)
    assert agreed >= diverged


@pytest.fixture(scope="module")
def check_backend(small_model_path: Path):
    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(small_model_path, grammar_engine="llama.cpp-check")


def test_llama_check_engine_matches_llguidance_token_for_token(check_backend, stepwise_backend, sample_index) -> None:
    """Both check the model's best token and mask only on rejection, one with llama.cpp's grammar code and one with
    llguidance's: at temperature 0 (no jump-forward) they pick the same tokens. The one allowed exception, seen on
    this model: two allowed tokens a hair apart ("Final" against "F": 0.005 apart as generated token by token, 0.17
    when the same text is evaluated in one batch), where evaluations in separate contexts differ in the last digits
    and flip the tie. There both tokens must be allowed by both grammars and score within 0.5 of each other (the
    batch re-evaluation below is itself up to about 0.2 off the token-by-token logits)."""
    import llama_cpp

    agreed = near_ties = 0
    for agent, prompt in agent_prompts(stepwise_backend, sample_index):
        for grammar in (agent.grammar.gbnf, agent.final_grammar.gbnf):
            stepwise_backend.llm.reset()
            expected = stepwise_backend.complete(prompt, grammar=grammar, max_tokens=200)
            check_backend.llm.reset()
            checked = check_backend.complete(prompt, grammar=grammar, max_tokens=200)
            assert checked.masked_tokens > 0 and checked.forced_tokens == 0
            if checked.tokens == expected.tokens:
                agreed += 1
                continue
            near_ties += 1
            at = next(i for i, (a, b) in enumerate(zip(checked.tokens, expected.tokens, strict=False)) if a != b)
            mine, theirs = checked.tokens[at], expected.tokens[at]
            for backend in (stepwise_backend, check_backend):
                matcher = backend._guide.matcher(grammar)
                for token in expected.tokens[:at]:
                    matcher.consume_token(token)
                assert matcher.validate_tokens([mine]) == 1 and matcher.validate_tokens([theirs]) == 1
            llm = check_backend.llm
            llm.reset()
            llm.eval(check_backend.tokenize(prompt, prompt=True) + expected.tokens[:at])
            logits = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            assert abs(logits[mine] - logits[theirs]) < 0.5, (checked.text, expected.text)
    assert agreed > near_ties


@pytest.mark.parametrize("engine", ["reference", "check"])
def test_llama_grammar_engines_also_always_parse(
    engine: str, reference_backend, check_backend, small_backend, sample_index
) -> None:
    backend = reference_backend if engine == "reference" else check_backend
    agent, prompt = agent_prompts(small_backend, sample_index)[-1]
    for seed in range(4):
        completion = backend.complete(prompt, grammar=agent.grammar.gbnf, max_tokens=256, temperature=1.0, seed=seed)
        StepParser(agent.spec).parse(completion.text)


def test_jump_forward_appends_forced_tokens(small_backend, sample_index) -> None:
    agent, prompt = agent_prompts(small_backend, sample_index)[0]
    completion = small_backend.complete(prompt, grammar=agent.grammar.gbnf, max_tokens=200)
    assert completion.forced_tokens > 0 and completion.text.startswith("Thought: ")


@pytest.mark.parametrize("engine", ["llguidance", "llama.cpp-check", "llama.cpp"])
def test_a_grammar_that_does_not_compile_is_an_error(small_model_path: Path, engine: str) -> None:
    from offline_agent.backends.llamacpp import LlamaCppBackend
    from offline_agent.errors import GrammarError

    backend = LlamaCppBackend(small_model_path, grammar_engine=engine)
    with pytest.raises(GrammarError):
        backend.complete("Hello", grammar='root ::= "a" missing-rule', max_tokens=8)


def test_unknown_grammar_engine(small_model_path: Path) -> None:
    from offline_agent.backends.llamacpp import LlamaCppBackend
    from offline_agent.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown grammar engine"):
        LlamaCppBackend(small_model_path, grammar_engine="regex")


def test_gpu_layers_on_a_build_without_a_gpu_is_one_clear_error(small_model_path: Path, isolated_home: Path) -> None:
    """llama.cpp built for the CPU loads every layer there without a word; asking for the GPU says so instead."""
    import llama_cpp

    from offline_agent.backends.llamacpp import LlamaCppBackend
    from offline_agent.errors import ConfigError

    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("this llama-cpp-python build has GPU support")
    with pytest.raises(ConfigError, match="--gpu-layers -1: this llama-cpp-python build cannot use a GPU"):
        LlamaCppBackend(small_model_path, gpu_layers=-1)
    result = subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", "ask", "Who?", "--model", str(small_model_path)],
        capture_output=True,
        text=True,
        env={**cli_env(isolated_home), "OFFLINE_AGENT_GPU_LAYERS": "20"},
        timeout=120,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: --gpu-layers 20: this llama-cpp-python build")
