"""A model server that misbehaves gets one line and a bounded wait (`ask --backend http`, as a user runs it).

Fake servers (tests/fake_servers.py) send what a broken or hostile server could: JSON nested 100,000 deep,
`/v1/models` as a list, settings that are not an object, `n_ctx: "abc"`, a tokenize reply that is a number, a
completion whose `content` is not text. A bad `--server-url` is refused. A server that accepts and never answers,
and a stream that stalls, hold `--max-seconds N` for about N seconds (detection included), never minutes: a run
still going after HANG_S is a hang. So does a server that sends its headers, its body or its stream a byte every
0.5 s (each read would end well within a socket's timeout): the time limit bounds the whole exchange. No message
and no trajectory shows credentials from the URL.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fake_servers import FakeServer
from harness import cli_bounded, one_line_error, outcome_of

DEEP = b"[" * 100_000 + b"]" * 100_000
HANG_S = 90  # a guard far above the time limits used here (3-5 s): a loaded machine starts Python slowly
# A dripping server's replies last minutes (a byte every 0.5 s): a run still going after this did not hold its limit.
DRIP_BOUND_S = 60
AREA = "model server misbehaving"


def _ask(url: str, corpus: Path, home: Path, *extra: str, timeout: float = HANG_S):
    args = ("ask", "Where was Marie Curie born?", "--corpus", str(corpus), "--backend", "http", "--server-url", url)
    return cli_bounded(*args, "--max-steps", "2", *extra, home=home, timeout=timeout)


HOSTILE = {
    "deep JSON from /props": ("llama-server", {"/props": DEEP}, ()),
    "deep JSON as the completion": ("llama-server", {"/completion": DEEP}, ()),
    "deep JSON as /v1/models": ("vllm", {"/v1/models": DEEP}, ()),
    "/v1/models as a list": ("vllm", {"/v1/models": b'[{"id": "m", "owned_by": "vllm"}]'}, ()),
    "/v1/models as a list, kind given": ("vllm", {"/v1/models": b"[1, 2]"}, ("--server-kind", "vllm")),
    "settings not an object": ("llama-server", {"/props": b'{"default_generation_settings": [1], "n_ctx": {}}'}, ()),
    "n_ctx not a number": ("llama-server", {"/props": b'{"default_generation_settings": {"n_ctx": "abc"}}'}, ()),
    "tokenize answers a number": ("llama-server", {"/tokenize": b"5"}, ()),
    "tokenize gives no list": ("llama-server", {"/tokenize": b'{"tokens": 5}'}, ()),
    "content not text": ("llama-server", {"/completion": b'{"content": 5, "stop": true, "stop_type": "eos"}'}, ()),
    "choices not a list": ("vllm", {"/v1/completions": b'{"choices": {"text": "x"}}'}, ()),
    "text not text": ("vllm", {"/v1/completions": b'{"choices": [{"text": ["x"], "finish_reason": "stop"}]}'}, ()),
    "a reply that is not JSON": ("llama-server", {"/completion": b"<html>502 Bad Gateway</html>"}, ()),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=[case.replace(" ", "-") for case in HOSTILE])
def test_a_hostile_reply_is_one_line(case: str, tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    kind, raw, extra = HOSTILE[case]
    with FakeServer(kind, raw=raw) as server:
        result = _ask(server.url, tiny_corpus, tmp_path, *extra)
    # A server that sends nonsense in a field it may leave out is used as if it had not said it (exit 0); one that
    # sends nonsense where an answer must be is one error line (exit 1).
    ok = result is not None and "Traceback" not in result.stderr
    ok = ok and (result.returncode in (0, 3) or one_line_error(result) is not None)
    ledger.record(AREA, outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "http://", "ftp://127.0.0.1", "http://a b"])
def test_a_bad_server_url_is_one_line(url: str, tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    result = _ask(url, tiny_corpus, tmp_path)
    ok = result is not None and one_line_error(result) is not None and "server" in one_line_error(result)
    ledger.record(AREA, outcome_of(result, ok))
    assert ok, None if result is None else result.stderr[-2000:]


@pytest.mark.parametrize(
    ("hang", "stall", "extra"),
    [
        (("/props", "/get_model_info", "/v1/models"), False, ()),  # detection
        (("/completion",), False, ("--server-kind", "llama-server")),  # the probe
        ((), True, ()),  # a stream that stalls after one event
    ],
    ids=["detection", "probe", "stalled-stream"],
)
def test_a_server_that_never_answers_holds_the_time_limit_only(
    hang: tuple[str, ...], stall: bool, extra: tuple[str, ...], tiny_corpus: Path, tmp_path: Path, ledger
) -> None:
    with FakeServer("llama-server", hang=hang, stall=stall) as server:
        result = _ask(server.url, tiny_corpus, tmp_path, "--max-seconds", "4", *extra)
    if stall:  # the probe passes; the run's first step stalls: a timeout, with its trajectory
        ok = result is not None and result.returncode == 3 and "stop reason timeout" in result.stderr
    else:
        line = one_line_error(result) if result is not None else None
        ok = line is not None and "within 4 s (--max-seconds)" in line
    ok = ok and "Traceback" not in (result.stderr if result is not None else "")
    ledger.record(AREA, outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_no_message_or_trajectory_shows_credentials(tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    secrets = ("s3cret-pass", "tok-98765")
    unreachable = f"http://alice:{secrets[0]}@127.0.0.1:{_closed_port()}/v1?token={secrets[1]}"
    results = [_ask(unreachable, tiny_corpus, tmp_path)]
    with FakeServer("vllm") as server:
        reachable = server.url.replace("http://", f"http://alice:{secrets[0]}@") + f"/?token={secrets[1]}"
        results.append(_ask(reachable, tiny_corpus, tmp_path, "--json"))
        sent = [request for request in server.requests if request[0].startswith("/v1/completions")]
    for result in results:
        shown = "" if result is None else result.stdout + result.stderr
        ok = result is not None and not any(secret in shown for secret in secrets) and "Traceback" not in shown
        ledger.record(AREA, outcome_of(result, ok))
        assert ok, shown[-2000:]
    assert one_line_error(results[0]) is not None and "***" in results[0].stderr
    trajectory = json.loads(results[1].stdout)
    assert trajectory["model"]["url"].startswith("http://***@127.0.0.1") and sent  # it did reach the server


DRIPS = {  # a server that sends a byte every 0.5 s: --max-seconds 2 bounds the whole exchange, not each read
    "headers a byte at a time (detection)": (dict.fromkeys(("/props", "/get_model_info", "/v1/models"), "headers"), ()),
    "a body a byte at a time (the probe)": ({"/completion": "body"}, ("--server-kind", "llama-server")),
    "a stream a byte at a time": ({"/completion": "stream"}, ()),
}


@pytest.mark.parametrize("case", list(DRIPS), ids=[case.replace(" ", "-") for case in DRIPS])
def test_a_server_that_drips_bytes_holds_the_time_limit(case: str, tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    drip, extra = DRIPS[case]
    with FakeServer("llama-server", drip=drip, drip_pause=0.5) as server:
        result = _ask(server.url, tiny_corpus, tmp_path, "--max-seconds", "2", *extra, timeout=DRIP_BOUND_S)
    if "stream" in case:  # set-up passes; the first step's stream is cut at the deadline: stop reason timeout
        ok = result is not None and result.returncode == 3 and "stop reason timeout" in result.stderr
    else:
        line = one_line_error(result) if result is not None else None
        ok = line is not None and "within 2 s (--max-seconds)" in line
    ledger.record("http", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])


def test_without_a_time_limit_the_server_timeout_bounds_a_dripped_reply(tiny_corpus: Path, tmp_path: Path, ledger):
    """--server-timeout bounds each request's whole exchange too: a reply a byte at a time is no answer."""
    with FakeServer("llama-server", drip={"/completion": "body"}, drip_pause=0.5) as server:
        args = ("--server-kind", "llama-server", "--server-timeout", "2")
        result = _ask(server.url, tiny_corpus, tmp_path, *args, timeout=DRIP_BOUND_S)
    line = one_line_error(result) if result is not None else None
    ok = line is not None and "did not answer within 2 s" in line
    ledger.record("http", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])
