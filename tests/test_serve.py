"""`offline-agent serve` without a model: the OpenAI dialect, the guard, the passages, the queue, the command line.

The application runs in-process (Starlette's test client) on the scripted backend over the tiny corpus; the real
model, real clients (openai, curl) and a real browser are in test_serve_model.py and test_serve_browser.py.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from serve_support import HOSTILE
from support import TINY_CORPUS
from test_cli import assert_one_line_error, run

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install -e '.[test]'")
TestClient = pytest.importorskip(
    "starlette.testclient", reason="Starlette's test client needs httpx2 (it comes with the mcp extra)"
).TestClient

from offline_agent.agents import AgentSettings, RunConfig  # noqa: E402
from offline_agent.backends import ScriptedBackend  # noqa: E402
from offline_agent.serve import Job, QueueFullError, RunCancelled, RunQueue, build_app, open_served  # noqa: E402
from offline_agent.serve.openai_api import RequestError, read_chat  # noqa: E402
from offline_agent.serve.server import is_loopback, model_names, run_question  # noqa: E402

QUESTION = "Into which sea does the Vistula flow?"
KEY = "s3cret-key"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A corpus whose only document holds markup that must stay text."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "trap.md").write_text(HOSTILE, encoding="utf-8")
    return folder


@pytest.fixture
def served(tiny_corpus: Path, hostile: Path):
    backend = ScriptedBackend()
    settings = AgentSettings("react", "plain", config=RunConfig(max_steps=3))
    served = open_served([str(tiny_corpus), str(hostile)], backend, settings, None, show_sources=False)
    runs = RunQueue(run_question(served), limit=4)
    yield served, runs, backend
    runs.close(timeout=5)


def client(served, *, api_key: str | None = None, loopback: bool = True, cors: tuple[str, ...] = ()) -> TestClient:
    state, runs, _ = served
    app = build_app(state, runs, api_key=api_key, loopback=loopback, cors=cors)
    return TestClient(app, base_url="http://127.0.0.1:8000")


def ask(http: TestClient, content: str = QUESTION, **fields: Any):
    body = {"model": "corpus", "messages": [{"role": "user", "content": content}], **fields}
    return http.post("/v1/chat/completions", json=body)


def test_models_list_one_model_per_index_and_the_default(served) -> None:
    reply = client(served).get("/v1/models")
    assert reply.status_code == 200
    data = reply.json()["data"]
    assert [model["id"] for model in data] == ["corpus", "hostile"]
    assert [model["offline_agent"]["default"] for model in data] == [True, False]
    assert data[0]["offline_agent"]["passages"] == len(TINY_CORPUS)
    assert client(served).get("/v1/models/hostile").json()["id"] == "hostile"
    assert client(served).get("/v1/models/nope").status_code == 404


def test_a_completion_carries_the_answer_its_sources_and_its_trajectory(served) -> None:
    _, _, backend = served
    backend.enqueue("Thought: find it\nAction: search[Vistula sea]", "Thought: done\nFinal: the Baltic Sea")
    http = client(served)
    reply = ask(http, temperature=0.5, seed=7, max_tokens=64, logit_bias={"1": 2}, user="someone")  # unknown: ignored
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["object"] == "chat.completion" and body["model"] == "corpus"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "the Baltic Sea"}
    extension = body["offline_agent"]
    assert (extension["answer"], extension["stop_reason"], extension["index"]) == ("the Baltic Sea", "final", "corpus")
    assert [Path(source["path"]).name for source in extension["sources"]] == ["vistula.md"]
    assert "Baltic Sea" in extension["sources"][0]["sentence"]
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    call = backend.calls[0]
    assert (call.temperature, call.seed, call.max_tokens) == (0.5, 7, 64)  # the request's settings reach the run
    trajectory = http.get(extension["trajectory_url"]).json()
    assert trajectory["answer"] == "the Baltic Sea" and trajectory["question"] == QUESTION
    assert [step["action"] for step in trajectory["steps"]] == ["search", None]
    assert http.get("/v1/trajectories/chatcmpl-unknown").status_code == 404


def test_sources_are_written_under_the_answer_when_asked(served) -> None:
    _, _, backend = served
    backend.enqueue("Thought: a\nAction: search[Vistula sea]", "Thought: b\nFinal: the Baltic Sea")
    content = ask(client(served), show_sources=True).json()["choices"][0]["message"]["content"]
    answer, sources = content.split("\n\nSources:\n")
    assert answer == "the Baltic Sea" and "vistula.md" in sources and "Baltic Sea near Gdansk" in sources


def test_earlier_turns_are_the_history_and_written_sources_are_cut_off(served) -> None:
    _, _, backend = served
    backend.enqueue("Thought: b\nFinal: Gdansk")
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "the Baltic Sea\n\nSources:\n  [1] vistula.md"},
        {"role": "user", "content": [{"type": "text", "text": "Which city is near where it ends?"}]},
    ]
    reply = client(served).post("/v1/chat/completions", json={"model": "corpus", "messages": messages})
    assert reply.status_code == 200, reply.text
    trajectory = client(served).get(reply.json()["offline_agent"]["trajectory_url"]).json()
    assert trajectory["history"] == [{"question": QUESTION, "answer": "the Baltic Sea"}]
    assert "You are helpful" not in backend.calls[0].prompt and "the Baltic Sea" in backend.calls[0].prompt


def events(text: str) -> list[Any]:
    return [json.loads(line[6:]) if line != "data: [DONE]" else "[DONE]" for line in text.split("\n\n") if line]


def test_a_stream_sends_the_steps_then_the_answer_then_done(served) -> None:
    _, _, backend = served
    backend.enqueue("Thought: find it\nAction: search[Vistula sea]", "Thought: done\nFinal: the Baltic Sea")
    with client(served).stream(
        "POST",
        "/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": QUESTION}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
        sent = events(reply.read().decode("utf-8"))
    assert sent[-1] == "[DONE]" and sent[0]["choices"][0]["delta"]["role"] == "assistant"
    kinds = [chunk.get("offline_agent", {}).get("event") for chunk in sent[:-1]]
    assert kinds.index("step_start") < kinds.index("observation") < kinds.index("end")
    reasoning = "".join(chunk["choices"][0]["delta"].get("reasoning_content", "") for chunk in sent[1:-2])
    assert "Action: search[Vistula sea]" in reasoning and "Observation: " in reasoning and "Gdansk" in reasoning
    content = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in sent[1:-2] if chunk["choices"])
    assert content == "the Baltic Sea"
    end = next(chunk for chunk in sent[:-1] if chunk.get("offline_agent", {}).get("event") == "end")
    assert end["choices"][0]["finish_reason"] == "stop" and end["offline_agent"]["sources"][0]["path"].endswith(
        "vistula.md"
    )
    assert sent[-2]["choices"] == [] and sent[-2]["usage"]["completion_tokens"] >= 0  # include_usage


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "the body is not JSON"),
        (b"[1, 2]", 400, "the body must be a JSON object"),
        (b"{}", 400, "messages must be a non-empty list"),
        (b'{"messages": [{"role": "user", "content": "  "}]}', 400, "the last message must be the user's question"),
        (b'{"messages": [{"role": "assistant", "content": "hi"}]}', 400, "the last message must be the user's"),
        (b'{"messages": [{"role": "wizard", "content": "hi"}]}', 400, "messages[0] must be an object with a role"),
        (b'{"messages": [{"role": "user", "content": 5}]}', 400, "messages[0].content must be a string"),
        (b'{"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}', 404, "the model 'gpt-4' does not"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}', 400, "temperature must be a"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "temperature": 9}', 400, "temperature must be between"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}', 400, "max_tokens must be between 16"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "seed": 1.5}', 400, "seed must be an integer"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "n": 3}', 400, "n must be 1"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}', 400, "stream must be true or false"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream_options": 1}', 400, "stream_options must be"),
        (b"[" * 100000, 400, "the body is not JSON"),
    ],
)
def test_a_bad_request_gets_an_openai_error_with_a_4xx_status(served, body: bytes, status: int, message: str) -> None:
    reply = client(served).post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == status
    error = reply.json()["error"]
    assert error["message"].startswith(message) and "Traceback" not in reply.text
    assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"


def test_other_bad_requests(served) -> None:
    http = client(served)
    form = http.post("/v1/chat/completions", content=b"messages=hi", headers={"Content-Type": "text/plain"})
    assert form.status_code == 415 and "Content-Type: application/json" in form.json()["error"]["message"]
    big = http.post("/v1/chat/completions", content=b" " * (2 << 20), headers={"Content-Type": "application/json"})
    assert big.status_code == 413
    assert http.get("/v1/chat/completions").status_code == 405
    missing = http.get("/v1/nothing/here")
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "GET /v1/nothing/here: Not Found"


def test_a_question_too_long_for_the_context_is_a_400(served) -> None:
    state, _, backend = served
    backend.context_size = 64
    reply = ask(client(served), "word " * 200)
    assert reply.status_code == 400 and reply.json()["error"]["message"].startswith("the question is too long")


def test_passages_are_read_from_the_served_indexes_only(served) -> None:
    http = client(served)
    state, _, _ = served
    first = state.sessions["corpus"].index.search("Vistula Baltic", k=1).passages[0]
    reply = http.get(f"/v1/passages/corpus/{first.id}")
    assert reply.status_code == 200 and reply.json()["path"].endswith("vistula.md") and "Gdansk" in reply.json()["text"]
    for path in (
        "/v1/passages/corpus/999999",
        "/v1/passages/corpus/-1",
        f"/v1/passages/corpus/{1 << 70}",
        "/v1/passages/notes/0",
        "/v1/passages/corpus/..%2F..%2Fetc%2Fpasswd",
        "/v1/passages/../../etc/passwd",
        "/v1/passages/%2e%2e/0",
        "/static/..%2F..%2F..%2Fetc%2Fpasswd",
        "/static/index.html",
        "/static/../app.py",
    ):
        reply = http.get(path)
        assert reply.status_code == 404, path
        assert "root:" not in reply.text and "error" in reply.json(), path


def test_the_page_and_its_files_load_nothing_from_elsewhere(served) -> None:
    http = client(served)
    page = http.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    for text in (page.text, http.get("/static/app.js").text, http.get("/static/style.css").text):
        assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert "innerHTML" not in http.get("/static/app.js").text  # everything shown is set as text


def test_an_api_key_is_asked_on_every_route(served) -> None:
    http = client(served, api_key=KEY, loopback=False)
    for method, path in [("GET", "/"), ("GET", "/v1/models"), ("GET", "/static/app.js"), ("GET", "/health"),
                         ("POST", "/v1/chat/completions"), ("GET", "/v1/passages/corpus/0"),
                         ("GET", "/v1/trajectories/x"), ("GET", "/no/such/route")]:  # fmt: skip
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Token {KEY}"}):
            reply = http.request(method, path, headers=headers)
            assert reply.status_code == 401, (method, path, headers)
            assert reply.json()["error"]["code"] == "invalid_api_key" and "Bearer" in reply.headers["www-authenticate"]
    assert http.get("/v1/models", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    basic = base64.b64encode(f"me:{KEY}".encode()).decode()
    assert http.get("/", headers={"Authorization": f"Basic {basic}"}).status_code == 200  # a browser's way
    assert http.get("/", headers={"Authorization": "Basic !!!"}).status_code == 401


def test_loopback_without_a_key_answers_to_loopback_host_names_only(served) -> None:
    http = client(served)
    assert http.get("/v1/models").status_code == 200
    assert http.get("/v1/models", headers={"Host": "localhost:8000"}).status_code == 200
    rebound = http.get("/v1/models", headers={"Host": "evil.example:8000"})  # DNS rebinding
    assert rebound.status_code == 421 and "loopback host only" in rebound.json()["error"]["message"]


def test_no_cors_unless_an_origin_is_named(served) -> None:
    preflight = {"Origin": "http://elsewhere.test", "Access-Control-Request-Method": "POST"}
    plain = client(served).options("/v1/chat/completions", headers=preflight)
    assert "access-control-allow-origin" not in plain.headers
    assert "access-control-allow-origin" not in client(served).get("/v1/models", headers=preflight).headers
    allowed = client(served, cors=("http://elsewhere.test",), api_key=KEY)
    reply = allowed.options(
        "/v1/chat/completions", headers={**preflight, "Access-Control-Request-Headers": "authorization"}
    )
    assert reply.status_code == 200 and reply.headers["access-control-allow-origin"] == "http://elsewhere.test"
    other = allowed.options("/v1/chat/completions", headers={**preflight, "Origin": "http://other.test"})
    assert "access-control-allow-origin" not in other.headers


def test_a_full_queue_is_a_503_with_retry_after(served) -> None:
    state, _, _ = served
    gate, started = threading.Event(), threading.Event()

    def blocked(job: Job, callbacks: Any) -> Any:
        started.set()
        gate.wait(10)
        raise RunCancelled("let go")

    runs = RunQueue(blocked, limit=1)
    try:
        runs.submit(Job("first", "corpus", RunConfig()))
        assert started.wait(10)
        runs.submit(Job("second", "corpus", RunConfig()))  # waits: the queue holds one
        with pytest.raises(QueueFullError):
            runs.submit(Job("third", "corpus", RunConfig()))
        reply = ask(TestClient(build_app(state, runs, api_key=None, loopback=True), base_url="http://127.0.0.1"))
        assert reply.status_code == 503 and int(reply.headers["retry-after"]) >= 1
        assert reply.json()["error"]["code"] == "queue_full"
    finally:
        gate.set()
        runs.close(timeout=10)
    assert runs.counts == {"answered": 0, "cancelled": 2, "failed": 0}


def test_a_cancelled_run_stops_at_its_next_step(served) -> None:
    state, _, backend = served
    backend.enqueue("Thought: a\nAction: search[Vistula]", "Thought: b\nAction: search[Baltic]", "Thought: c\nFinal: x")
    job = Job(QUESTION, "corpus", RunConfig(max_steps=3))

    def run(job: Job, callbacks: Any) -> Any:
        seen = callbacks.on_step

        def on_step(record: Any) -> None:
            seen(record)
            job.cancel()  # the client goes away while step 1 is written

        callbacks.on_step = on_step
        return run_question(state)(job, callbacks)

    runs = RunQueue(run)
    runs.submit(job)
    assert job.finished.wait(30)
    runs.close(timeout=10)
    assert isinstance(job.error, RunCancelled) and job.trajectory is None
    assert len(backend.calls) == 1  # step 1 was finished, step 2 never started
    assert runs.counts["cancelled"] == 1


def test_request_reading_keeps_what_it_was_given() -> None:
    asked = read_chat(
        json.dumps({"messages": [{"role": "user", "content": " hi \ud800"}], "max_completion_tokens": 32}).encode(),
        ["a", "b"],
        RunConfig(),
    )
    assert (asked.model, asked.question, asked.config.max_tokens) == ("a", "hi \ufffd", 32)
    with pytest.raises(RequestError) as caught:
        read_chat(b'{"model": 3, "messages": []}', ["a"], RunConfig())
    assert caught.value.param == "model"


def test_model_names_and_loopback() -> None:
    assert model_names(["notes", "/x/docs", "~/y/docs/", "../docs"])[:3] == ["notes", "docs", "docs-2"]
    assert all(map(is_loopback, ["127.0.0.1", "localhost", "::1", "127.1.2.3"]))
    assert not any(map(is_loopback, ["0.0.0.0", "192.168.1.2", "::", "example.org"]))


# ---- the command line --------------------------------------------------------------------------------------------
def test_help_lists_the_serve_options_and_the_run_options(isolated_home: Path) -> None:
    result = run("serve", "-h", home=isolated_home)
    assert result.returncode == 0
    for option in ("--corpus", "--host", "--port", "--api-key", "--cors", "--queue", "--show-sources", "--max-seconds",
                   "--temperature", "--profile", "-o, --option", "--model", "--backend"):  # fmt: skip
        assert option in result.stdout, option


def test_a_non_loopback_host_needs_an_api_key(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OFFLINE_AGENT_API_KEY", raising=False)
    result = run("serve", "--host", "0.0.0.0", "--port", "0", home=isolated_home)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--host 0.0.0.0 is reachable from other machines: give --api-key" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "no-such-index-here"], "error: "),
        (["--port", "70000"], "Invalid value for '--port'"),
        (["--api-key", "  "], "Invalid value for --api-key: is empty"),
    ],
)
def test_bad_serve_options_are_one_line(args: list[str], message: str, isolated_home: Path) -> None:
    result = run("serve", "--port", "0", "--model", "no-such-model", *args, home=isolated_home)
    assert result.returncode in (1, 2) and message in result.stderr and "Traceback" not in result.stderr


def test_a_port_in_use_is_one_line_error(isolated_home: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run("serve", "--port", str(port), home=isolated_home)
    assert_one_line_error(result, f"error: cannot serve on 127.0.0.1:{port}: ")
