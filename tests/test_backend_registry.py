"""The backend registry and `--backend` on the command line (fast: nothing here loads a model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import cli_env

from offline_agent.backends import BACKENDS, BackendOptions, backend_entry, build_backend
from offline_agent.backends.registry import OPTION_FLAGS, check_options
from offline_agent.errors import ConfigError


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", *args],
        capture_output=True,
        text=True,
        env={**cli_env(), **(env or {})},
        timeout=120,
    )


def one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], result.stderr


def test_the_registry_names_every_backend_and_its_options() -> None:
    assert sorted(BACKENDS) == ["http", "llamacpp", "transformers"]
    for entry in BACKENDS.values():
        assert entry.summary and set(entry.options) <= set(OPTION_FLAGS)
        assert {"model", "context_size", "seed"} <= set(entry.options)
        module, _, name = entry.target.partition(":")
        assert module.startswith("offline_agent.backends.") and name.endswith("Backend")
    assert backend_entry("llama.cpp") is BACKENDS["llamacpp"]  # the name older run folders recorded
    assert backend_entry(None) is BACKENDS["llamacpp"]
    assert BACKENDS["http"].in_process is False and BACKENDS["transformers"].in_process is True


def test_unknown_backends_and_options() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown backend 'vllm'; choose from \['http', 'llamacpp', 'transformers'\]"
    ):
        build_backend("vllm")
    with pytest.raises(ConfigError, match="unknown backend option"):
        build_backend("llamacpp", gpus=2)
    with pytest.raises(ConfigError, match="--device does not apply to backend 'llamacpp'"):
        build_backend("llamacpp", device="cuda")
    with pytest.raises(ConfigError, match="--gpu-layers, --threads do not apply to backend 'http'"):
        check_options("http", BackendOptions(gpu_layers=2, threads=4))
    # An option that came from the environment (named in `ignore`) is dropped, not refused.
    kept = check_options("http", BackendOptions(gpu_layers=2, server_url="http://x"), ignore=frozenset({"gpu_layers"}))
    assert kept.gpu_layers is None and kept.server_url == "http://x"


def test_cli_refuses_an_option_the_backend_does_not_take() -> None:
    result = run("ask", "Who?", "--backend", "http", "--gpu-layers", "3", "--server-url", "http://127.0.0.1:9")
    one_line_error(result, "--gpu-layers does not apply to backend 'http'", "--server-url")
    result = run("chat", "--backend", "transformers", "--grammar-engine", "llama.cpp")
    one_line_error(result, "--grammar-engine does not apply to backend 'transformers'")
    result = run("eval", "questions.jsonl", "--device", "cpu")
    one_line_error(result, "--device does not apply to backend 'llamacpp'")


def test_cli_backend_from_the_environment_and_env_options_it_does_not_take(tmp_path: Path) -> None:
    # OFFLINE_AGENT_GPU_LAYERS is for llama.cpp; with the http backend it is dropped, and the missing URL is the error.
    env = {"OFFLINE_AGENT_BACKEND": "http", "OFFLINE_AGENT_GPU_LAYERS": "4"}
    env.pop("OFFLINE_AGENT_SERVER_URL", None)
    one_line_error(run("ask", "Who?", env=env), "--backend http needs --server-url")
    result = run("ask", "Who?", "--backend", "nope")
    assert result.returncode == 2 and "unknown backend 'nope'" in result.stderr


def test_cli_refuses_concurrency_with_an_in_process_backend(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "1", "question": "q?", "answer": "a"}\n')
    result = run("eval", str(questions), "--concurrency", "4", "--out", str(tmp_path / "run"))
    one_line_error(result, "--concurrency 4", "'llamacpp'", "one completion at a time")


def test_help_lists_the_backend_options() -> None:
    for command in ("ask", "chat", "eval"):
        text = run(command, "--help").stdout
        for option in ("--backend", "--server-url", "--server-kind", "--device", "--gpu-layers", "--threads"):
            assert option in text, (command, option)
        assert "OFFLINE_AGENT_BACKEND" in text and "OFFLINE_AGENT_SERVER_URL" in text
    assert "--concurrency" in run("eval", "--help").stdout


def test_public_api_is_sorted() -> None:
    import offline_agent.backends as backends
    import offline_agent.backends.registry as registry

    for module in (backends, registry):
        assert module.__all__ == sorted(module.__all__)
        for name in module.__all__:
            assert getattr(module, name) is not None
