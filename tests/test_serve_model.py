"""`offline-agent serve` with the small test model, talked to by real clients: the official `openai` package (plain
and streaming), curl, and a client that goes away mid-run; and SIGTERM while a question runs.

One server subprocess serves the whole module (the named index `notes` over the tiny corpus, and a folder holding
a hostile document). The small model answers badly: the tests check what the server guarantees, not the answers.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time

import pytest
from serve_support import ServerProcess, http_client, make_home
from support import smollm_path

from offline_agent.steps import STOP_REASONS

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install -e '.[test]'")
openai = pytest.importorskip("openai", reason="the openai client is not installed (the test extra has it)")
httpx = http_client()

pytestmark = pytest.mark.model
QUESTION = "Into which sea does the Vistula flow?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    home, hostile = make_home(tmp_path_factory.mktemp("serve"))
    args = ["--corpus", "notes", "--corpus", str(hostile), "--model", str(smollm_path()), "--profile", "plain"]
    process = ServerProcess([*args, "--max-steps", "2", "--threads", "1", "--queue", "4"], home)
    yield process
    process.stop()


def client(server: ServerProcess):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="not-needed-on-loopback", max_retries=0, timeout=300)


def test_the_openai_client_lists_the_models_and_gets_an_answer_with_sources(server: ServerProcess) -> None:
    models = client(server).models.list()
    assert [model.id for model in models.data] == ["notes", "hostile"]
    completion = client(server).chat.completions.create(
        model="notes",
        messages=[{"role": "user", "content": QUESTION}],
        temperature=0,
        seed=1,
        extra_body={"show_sources": True},
    )
    extension = completion.model_extra["offline_agent"]
    assert extension["stop_reason"] in STOP_REASONS and extension["index"] == "notes"
    content = completion.choices[0].message.content
    assert content and (content.startswith(extension["answer"]) if extension["answer"] else "no answer" in content)
    if extension["answer"] is not None and extension["stop_reason"] == "final":
        assert "Sources:" in content  # asked for: written under the answer
    print(f"\nopenai client: {content!r}\nsources: {json.dumps(extension['sources'])}")
    trajectory = httpx.get(server.url + extension["trajectory_url"]).json()
    assert trajectory["question"] == QUESTION and trajectory["seed"] == 1 and len(trajectory["steps"]) >= 1
    follow = client(server).chat.completions.create(
        model="notes",
        messages=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": content},
            {"role": "user", "content": "And which city is near its mouth?"},
        ],
    )
    later = httpx.get(server.url + follow.model_extra["offline_agent"]["trajectory_url"]).json()
    assert later["history"] == [{"question": QUESTION, "answer": extension["answer"]}]


def test_the_openai_client_streams_the_steps_then_the_answer(server: ServerProcess) -> None:
    stream = client(server).chat.completions.create(
        model="hostile", messages=[{"role": "user", "content": "What does the trap hold?"}], stream=True
    )
    reasoning, content, events, finish = [], [], [], None
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            reasoning.append((delta.model_extra or {}).get("reasoning_content") or "")
            content.append(delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        events.append((chunk.model_extra or {}).get("offline_agent", {}).get("event"))
    steps = "".join(reasoning)
    assert events.count("step_start") >= 1 and events[-1] == "end" and finish == "stop"
    assert events.index("step_start") < events.index("token") < events.index("end")
    assert steps.lstrip().startswith(("Thought:", "Action:", "Final:")) or "Thought:" in steps
    assert "".join(content)  # the answer, or why there is none
    print(f"\nstreamed steps:\n{steps}\nanswer: {''.join(content)!r}")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl(server: ServerProcess) -> None:
    body = json.dumps({"model": "notes", "messages": [{"role": "user", "content": QUESTION}], "show_sources": True})
    command = ["curl", "-sS", server.url + "/v1/chat/completions", "-H", "Content-Type: application/json", "-d", body]
    reply = json.loads(subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout)
    assert reply["object"] == "chat.completion" and reply["offline_agent"]["stop_reason"] in STOP_REASONS
    print(f"\ncurl: {reply['choices'][0]['message']['content']!r}")
    bad = subprocess.run([*command[:-1], "{"], capture_output=True, text=True, timeout=60).stdout
    assert json.loads(bad)["error"]["message"].startswith("the body is not JSON")


def health(server: ServerProcess) -> dict[str, int]:
    return httpx.get(server.url + "/health").json()


def first_step(server: ServerProcess, question: str, lines: list[str], started: threading.Event) -> None:
    """Stream `question`, keeping each line, until the first step starts; then go away (close the connection)."""
    body = {"model": "notes", "messages": [{"role": "user", "content": question}], "stream": True}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=300) as reply:
        for line in reply.iter_lines():
            lines.append(line)
            if '"step_start"' in line:
                started.set()
                return


def wait_for(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


def test_a_client_that_goes_away_cancels_its_run(server: ServerProcess) -> None:
    before = health(server)["cancelled"]
    lines: list[str] = []
    started = threading.Event()
    first_step(server, "Where was Marie Curie born, and in which year?", lines, started)
    assert started.is_set(), lines
    wait_for(lambda: health(server)["cancelled"] == before + 1, "the run was cancelled")
    assert health(server)["waiting"] == 0


def test_sigterm_finishes_the_step_and_exits_cleanly(server: ServerProcess) -> None:
    """Last in the module: it stops the module's server."""
    body = {"model": "notes", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    lines: list[str] = []
    started = threading.Event()

    def listen() -> None:
        with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=300) as reply:
            for line in reply.iter_lines():
                lines.append(line)
                if '"step_start"' in line:
                    started.set()

    reader = threading.Thread(target=listen)
    reader.start()
    assert started.wait(120), lines
    status = server.stop(signal.SIGTERM)
    reader.join(60)
    assert status == 0, server.stderr
    assert "offline-agent serve: stopped" in server.stderr and "Traceback" not in server.stderr
    sent = [line for line in lines if line]  # events are separated by blank lines
    assert sent[-1] == "data: [DONE]"  # the stream was ended, not cut: an answer, or the shutdown's error
    ended = [json.loads(line[6:]) for line in sent if line.startswith("data: {")][-1]
    assert ended.get("offline_agent", {}).get("event") == "end" or "shutting down" in ended["error"]["message"]
