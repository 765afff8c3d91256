"""No lost answer, no network, and the smaller holes: with the real small model and the CLI as a subprocess.

- `ask --trace /dev/full` prints the same answer as a run without a trace, then one error line, and exits 4;
  `chat --trace /dev/full` prints every answer; a trace path under a regular file or on a folder, and an eval
  run folder under a regular file, are refused before the model loads, with a message that says so.
- `ask` and `eval` run under `unshare -n` (no network namespace), where it is permitted.
- `--model ""` and `--max-seconds nan|inf|-1` are usage errors; `--max-seconds 0.1` stops with stop reason
  timeout, and the backend looks at the deadline before and between chunks of prompt evaluation.
- `search --index NAME` opens the index NAME even beside a folder called NAME; `models verify` refuses a
  truncated copy of a registry model.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from harness import cli, namespace_probe, one_line_error

from offline_agent import models

QUESTION = "Where was Marie Curie born?"
MODEL = ("--model", "smollm2-135m-instruct")
ANSWER_ARGS = (*MODEL, "--agent", "standard", "--max-tokens", "48", "--seed", "0")
pytestmark = pytest.mark.model


CORPUS = {
    "marie-curie.md": "# Marie Curie\n\nMarie Curie was a physicist and chemist born in Warsaw in 1867.",
    "warsaw.md": "# Warsaw\n\nWarsaw is the capital of Poland. The Vistula river flows through Warsaw.",
    "pierre-curie.md": "# Pierre Curie\n\nPierre Curie was a French physicist born in Paris in 1859.",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny") / "corpus"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reference_answer(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    home = tmp_path_factory.mktemp("home")
    result = cli("ask", QUESTION, "--corpus", str(corpus), *ANSWER_ARGS, "--quiet", home=home)
    assert result.returncode == 0 and result.stdout.strip(), result.stderr[-2000:]
    return result.stdout


def test_ask_with_an_unwritable_trace_still_prints_the_answer(corpus, reference_answer, tmp_path, ledger) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    result = cli("ask", QUESTION, "--corpus", str(corpus), *ANSWER_ARGS, "--quiet", "--trace", "/dev/full")
    line = one_line_error(result, code=4)
    kept = result.stdout == reference_answer
    ledger.record("lost answer (--trace)", "lost" if not kept else "handled" if line else "crashed")
    assert kept, (result.stdout, reference_answer)
    assert line == (
        "error: cannot write the trace file /dev/full: No space left on device (the trajectory was not saved)"
    )


@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_a_bad_trace_path_is_refused_before_the_model_loads(corpus, tmp_path: Path, ledger, where: str) -> None:
    (tmp_path / "notes.txt").write_text("a regular file")
    trace = tmp_path / "notes.txt" / "trace.jsonl" if where == "under a file" else tmp_path
    for command in (["ask", QUESTION], ["chat"]):
        result = cli(*command, "--corpus", str(corpus), *MODEL, "--trace", str(trace), stdin="")
        if where == "a folder":  # click's own check of the option: a usage error
            ok = result.returncode == 2 and "is a directory" in result.stderr and "Traceback" not in result.stderr
        else:
            line = one_line_error(result)
            ok = line is not None and f"{tmp_path / 'notes.txt'} is a file, not a folder" in line
        ok = ok and "model:" not in result.stderr
        ledger.record("lost answer (--trace)", "handled" if ok else "crashed")
        assert ok, result.stderr[-1000:]


def test_chat_with_an_unwritable_trace_prints_every_answer(corpus, tmp_path: Path, ledger) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    questions = f"{QUESTION}\nWho was Pierre Curie?\n"
    base = ("chat", "--corpus", str(corpus), *ANSWER_ARGS, "--quiet")
    reference = cli(*base, stdin=questions)
    result = cli(*base, "--trace", "/dev/full", stdin=questions)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    kept = reference.returncode == 0 and result.stdout == reference.stdout and len(result.stdout.splitlines()) == 2
    ledger.record("lost answer (--trace)", "lost" if not kept else "handled" if len(errors) == 2 else "crashed")
    assert kept, (result.stdout, reference.stdout)
    assert result.returncode == 4 and len(errors) == 2 and "Traceback" not in result.stderr


def test_eval_run_folder_under_a_file_is_refused_before_the_model_loads(tmp_path: Path, ledger) -> None:
    (tmp_path / "runs").write_text("a regular file")
    result = cli(
        "eval", "corpora/sample/questions.jsonl", *MODEL, "--limit", "1", "--out", str(tmp_path / "runs" / "x")
    )
    line = one_line_error(result)
    ok = line is not None and f"{tmp_path / 'runs'} is a file, not a folder" in line and "model:" not in result.stderr
    ledger.record("lost answer (--trace)", "handled" if ok else "crashed")
    assert ok, result.stderr[-1000:]


def _offline_prefix() -> tuple[str, ...]:
    for flags in (("-n",), ("-rn",)):
        if namespace_probe(*flags) is None:
            return ("unshare", *flags)
    pytest.skip(f"no network namespace here: {namespace_probe('-rn')}")


def test_ask_and_eval_work_without_a_network(corpus, reference_answer, tmp_path: Path, ledger) -> None:
    prefix = _offline_prefix()
    asked = cli("ask", QUESTION, "--corpus", str(corpus), *ANSWER_ARGS, "--quiet", prefix=prefix, home=tmp_path)
    ledger.record("no network (unshare -n)", "handled" if asked.stdout == reference_answer else "crashed")
    assert asked.returncode == 0 and asked.stdout == reference_answer, asked.stderr[-2000:]
    out = tmp_path / "run"
    args = ("eval", "corpora/sample/questions.jsonl", "--limit", "2", *ANSWER_ARGS, "--out", str(out), "--quiet")
    evaluated = cli(*args, prefix=prefix, home=tmp_path)
    rows = (out / "results.jsonl").read_text().splitlines() if (out / "results.jsonl").exists() else []
    ok = evaluated.returncode == 0 and len(rows) == 2 and json.loads((out / "summary.json").read_text())["questions"]
    ledger.record("no network (unshare -n)", "handled" if ok else "crashed")
    assert ok, evaluated.stderr[-2000:]


@pytest.mark.parametrize(
    "args",
    [("--model", ""), ("--max-seconds", "nan"), ("--max-seconds", "inf"), ("--max-seconds", "-1")],
    ids=["empty-model", "nan", "inf", "negative"],
)
def test_bad_limits_and_names_are_usage_errors(corpus, args: tuple[str, str], ledger) -> None:
    model = () if args[0] == "--model" else MODEL
    result = cli("ask", QUESTION, "--corpus", str(corpus), *model, *args)
    ok = result.returncode == 2 and "Invalid value" in result.stderr and "model:" not in result.stderr
    ledger.record("CLI edge cases", "handled" if ok else "crashed")
    assert ok, result.stderr[-1000:]


def test_max_seconds_stops_a_run_during_its_first_prompt(corpus, ledger) -> None:
    result = cli("ask", QUESTION, "--corpus", str(corpus), *MODEL, "--max-seconds", "0.1", "--json")
    trajectory = json.loads(result.stdout) if result.stdout.strip() else {}
    ok = result.returncode == 3 and trajectory.get("stop_reason") == "timeout" and len(trajectory["steps"]) <= 1
    ledger.record("CLI edge cases", "handled" if ok else "crashed")
    assert ok, (result.returncode, result.stderr[-1000:])


def test_the_backend_looks_at_the_deadline_during_prompt_evaluation(small_backend, monkeypatch, ledger) -> None:
    from offline_agent.backends import llamacpp, stream

    prompt = "Facts: " + " ".join(f"item {i} is red." for i in range(120))
    small_backend.llm.reset()
    before = small_backend.llm.n_tokens
    late = small_backend.complete(prompt, max_tokens=8, deadline=time.monotonic() - 1)
    nothing_evaluated = late.finish_reason == "interrupted" and small_backend.llm.n_tokens == before
    assert nothing_evaluated and late.usage.generated_tokens == 0

    looks = []

    def expired(completion_stream) -> bool:  # passes after the first chunk has been evaluated
        looks.append(small_backend.llm.n_tokens)
        return len(looks) > 1

    monkeypatch.setattr(stream.CompletionStream, "expired", expired)
    cut = small_backend.complete(prompt, max_tokens=8, deadline=time.monotonic() + 3600)
    one_chunk = cut.finish_reason == "interrupted" and small_backend.llm.n_tokens == llamacpp.PROMPT_CHUNK
    monkeypatch.undo()
    resumed = small_backend.complete(prompt, max_tokens=8)
    small_backend.llm.reset()
    fresh = small_backend.complete(prompt, max_tokens=8)
    ok = one_chunk and resumed.usage.cached_tokens >= llamacpp.PROMPT_CHUNK and resumed.text == fresh.text
    ledger.record("CLI edge cases", "handled" if ok else "crashed")
    assert one_chunk, (cut.finish_reason, small_backend.llm.n_tokens, looks)
    assert resumed.usage.cached_tokens >= llamacpp.PROMPT_CHUNK and resumed.text == fresh.text


def test_search_index_opens_the_named_index_beside_a_folder_of_that_name(tmp_path: Path, ledger) -> None:
    home = tmp_path / "home"
    for folder, text in ((tmp_path / "src", "The Danube flows to the Black Sea."), (tmp_path / "notes", "Oslo fjord.")):
        folder.mkdir()
        (folder / "a.txt").write_text(text, encoding="utf-8")
    built = cli("index", str(tmp_path / "src"), "--name", "notes", home=home)
    assert built.returncode == 0, built.stderr
    result = cli("search", "Danube", "--index", "notes", "--json", home=home, cwd=tmp_path)
    hits = json.loads(result.stdout)["hits"] if result.returncode == 0 else []
    ok = len(hits) == 1 and "Danube" in hits[0]["text"]
    ledger.record("CLI edge cases", "handled" if ok else "crashed")
    assert ok, result.stdout + result.stderr
    folder = cli("search", "Oslo", "--corpus", "notes", "--json", home=home, cwd=tmp_path)
    assert "Oslo" in json.loads(folder.stdout)["hits"][0]["text"]


def test_models_verify_refuses_a_truncated_copy(tmp_path: Path, small_model_path: Path, monkeypatch, ledger) -> None:
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(tmp_path / "home"))
    spec = models.load_registry()["smollm2-135m-instruct"]
    good = tmp_path / "good" / spec.file_name
    good.parent.mkdir()
    os.symlink(small_model_path, good)
    assert models.verify_model(str(good)).spec == spec  # the real file passes under any path
    for name in (spec.file_name, "renamed.gguf"):
        cut = tmp_path / name
        with small_model_path.open("rb") as src:
            cut.write_bytes(src.read(spec.size // 3))
        result = cli("models", "verify", str(cut), home=tmp_path / "home")
        line = one_line_error(result)
        expected = f"is not a good copy of {spec.name!r}" if name == spec.file_name else "cannot verify"
        ok = line is not None and expected in line and "\tok" not in result.stdout
        ledger.record("CLI edge cases", "handled" if ok else "crashed")
        assert ok, (result.stdout, result.stderr)
