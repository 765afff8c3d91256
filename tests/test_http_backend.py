"""The http backend against fake servers of each kind (fast): dialects, the grammar probe, errors, retries,
streaming and the deadline, and `eval --concurrency`.

vLLM, SGLang and llama-server are not run for real here (no GPU, and no package ships llama-server's binary for
this machine): these fakes follow their documented request fields. llama-cpp-python's real server is exercised in
test_backend_contract.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fake_servers import PROBE, FakeServer, answer_for
from support import plain_settings

from offline_agent.backends import Backend, build_backend
from offline_agent.backends.http import HttpBackend
from offline_agent.errors import ConfigError, ContextOverflowError, GrammarError, ModelError

KINDS = ["llama-server", "llama-cpp-python", "vllm", "sglang"]
GRAMMAR = 'root ::= "Thought: " [a-z ]+'


@pytest.mark.parametrize("kind", KINDS)
def test_each_dialect_is_detected_probed_and_sends_the_grammar_in_its_own_field(kind: str) -> None:
    with FakeServer(kind) as server:
        backend = build_backend("http", server_url=server.url)
        assert isinstance(backend, Backend) and backend.kind == kind
        completion = backend.complete("Question: who?\n", grammar=GRAMMAR, max_tokens=64, stop=["\nObservation:"])
    assert completion.text == answer_for("Question: who?\n") and completion.finish_reason == "stop"
    path, body = server.requests[-1]
    field = {
        "llama-server": body.get("grammar"),
        "llama-cpp-python": body.get("grammar"),
        "vllm": (body.get("structured_outputs") or {}).get("grammar"),
        "sglang": body.get("ebnf"),
    }[kind]
    assert field == GRAMMAR and "guided_grammar" not in body
    assert path == ("/completion" if kind == "llama-server" else "/v1/completions")
    probe = next(b for p, b in server.requests if PROBE in json.dumps(b))
    assert probe.get("temperature") == 0.0
    if kind == "llama-server":
        assert body["cache_prompt"] is True and body["n_probs"] == 0 and body["n_predict"] == 64
        assert backend.chat_template.startswith("{% for m in messages %}") and backend.bos_token == "<s>"
        assert completion.usage.cached_tokens == completion.usage.prompt_tokens - 2  # reported by the server
        assert backend.capabilities.reuses_prefix_cache
    else:
        assert body["model"] == f"fake-{kind}" and body["max_tokens"] == 64
        assert not backend.capabilities.reuses_prefix_cache and completion.usage.cached_tokens == 0
    assert not backend.capabilities.reports_rejections and backend.capabilities.concurrent_requests
    assert backend.capabilities.exact_token_counts == (kind != "sglang")
    assert completion.usage.prompt_tokens > 0 and completion.usage.generated_tokens > 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_ignores_the_grammar_is_refused(kind: str) -> None:
    with FakeServer(kind, ignore_grammar=True) as server, pytest.raises(GrammarError, match="ignores the grammar"):
        build_backend("http", server_url=server.url)


def test_a_server_that_rejects_the_grammar_field_is_refused() -> None:
    with FakeServer("vllm", reject_grammar=True) as server, pytest.raises(GrammarError, match="refused"):
        build_backend("http", server_url=server.url)


def test_the_wrong_server_kind_is_caught_by_the_probe() -> None:
    # A vLLM server sent llama-cpp-python's `grammar` field ignores it: the probe notices.
    with FakeServer("vllm") as server, pytest.raises(GrammarError, match="ignores the grammar"):
        build_backend("http", server_url=server.url, server_kind="llama-cpp-python")


def test_connection_errors_are_retried_and_then_reported() -> None:
    with FakeServer("llama-cpp-python", fail_first=2) as server:
        backend = HttpBackend(server.url, backoff=0.01)
        assert backend.complete("Question: x\n", grammar=GRAMMAR).text
    with FakeServer("llama-cpp-python") as server:
        url = server.url
    with pytest.raises(ModelError, match="no model server answers"):
        HttpBackend(url, backoff=0.01)
    with pytest.raises(ModelError, match="cannot reach"):
        HttpBackend(url, server_kind="vllm", backoff=0.01)


def test_api_key_and_refusals() -> None:
    with FakeServer("vllm", api_key="sekrit") as server:
        with pytest.raises(ConfigError, match="OFFLINE_AGENT_API_KEY"):
            HttpBackend(server.url)
        backend = HttpBackend(server.url, api_key="sekrit")
        assert backend.complete("Question: y\n", grammar=GRAMMAR).text


def test_context_overflow_from_the_servers_answer_and_from_counting() -> None:
    with FakeServer("sglang", n_ctx=50) as server:
        backend = HttpBackend(server.url, context_size=10_000)  # sglang: no token counts, the server decides
        with pytest.raises(ContextOverflowError):
            backend.complete("word " * 200, grammar=GRAMMAR)
    with FakeServer("vllm", n_ctx=50) as server:
        backend = HttpBackend(server.url)  # max_model_len 50, counted before sending
        with pytest.raises(ContextOverflowError, match="context window of 50"):
            backend.complete("word " * 200, grammar=GRAMMAR)


@pytest.mark.parametrize("kind", KINDS)
def test_streaming_and_the_deadline(kind: str) -> None:
    with FakeServer(kind) as server:
        backend = HttpBackend(server.url)
        pieces: list[str] = []
        streamed = backend.complete("Question: z\n", grammar=GRAMMAR, on_token=pieces.append)
        assert "".join(pieces) == streamed.text == answer_for("Question: z\n")
        assert streamed.finish_reason == "stop" and len(pieces) > 2
        server.delay = 0.05
        cut = backend.complete("Question: z\n", grammar=GRAMMAR, deadline=time.monotonic() + 0.01)
        assert cut.finish_reason == "interrupted" and len(cut.text) < len(streamed.text)


def test_options_a_backend_does_not_take_are_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match="--gpu-layers does not apply to backend 'http'"):
        build_backend("http", server_url="http://127.0.0.1:9", gpu_layers=3)
    with pytest.raises(ConfigError, match="needs --server-url"):
        build_backend("http")
    with pytest.raises(ConfigError, match="must start with http"):
        build_backend("http", server_url="127.0.0.1:8080")


def test_eval_concurrency_gives_the_same_results_in_dataset_order(tiny_corpus: Path, tmp_path: Path) -> None:
    from offline_agent.eval.results import RunFolder
    from offline_agent.eval.runner import EvalOptions, prepare_evaluation

    questions = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{i}", "question": f"Question number {i} about Curie?", "answer": "x"} for i in range(7)]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    results = {}
    with FakeServer("vllm", delay=0.02) as server:
        for n in (1, 3):
            options = EvalOptions(
                dataset=questions,
                pool=tiny_corpus,
                out=tmp_path / f"run{n}",
                backend="http",
                concurrency=n,
                **plain_settings(max_steps=3),
            )
            options.backend_options = options.backend_options.__class__(server_url=server.url)
            run = prepare_evaluation(options)
            run.run()
            results[n] = RunFolder(tmp_path / f"run{n}").read_results()
        assert server.most_in_flight >= 2
    assert [r["id"] for r in results[3]] == [r["id"] for r in rows]

    def content(row: dict) -> tuple:
        steps = [(s["raw"], s["observation"]) for s in row["trajectory"]["steps"]]
        return row["id"], row["prediction"], row["em"], steps

    assert [content(r) for r in results[1]] == [content(r) for r in results[3]]
    assert all(r["prediction"] and r["prediction"].startswith("answer-") for r in results[3])
    assert all(r["cached_tokens"] is None and r["grammar_rejections"] is None for r in results[3])


def test_eval_concurrency_is_refused_for_in_process_backends(tiny_corpus: Path, tmp_path: Path) -> None:
    from offline_agent.eval.runner import EvalOptions, prepare_evaluation

    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "1", "question": "q?", "answer": "a"}) + "\n", encoding="utf-8")
    options = EvalOptions(dataset=questions, pool=tiny_corpus, out=tmp_path / "run", concurrency=2)
    with pytest.raises(ConfigError, match="one completion at a time"):
        prepare_evaluation(options)
