"""Options a user types wrong or a script builds badly: each is one line, early, and never a long wait.

`--exclude '[z-a]'` (a range backwards) was a traceback from `re`; `--exclude '*a*a*a*a*b'` against long file names
backtracked for minutes (globs are now matched in linear time); `--seed -1` failed only after the model had loaded
(llama.cpp's seeds are 32 bits, numpy refuses a negative one); `--model /dev/zero` was called "a folder".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harness import cli, cli_bounded, one_line_error, outcome_of

BOUND_S = 60  # a guard: the old matcher took about 45 s for one 250-character name, minutes for the three here


def test_a_backwards_range_in_a_glob_is_one_line(tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    result = cli_bounded("index", str(tiny_corpus), "--name", "g", "--exclude", "[z-a]", home=tmp_path, timeout=BOUND_S)
    line = one_line_error(result) if result is not None else None
    ok = line is not None and "[z-a]" in line and "backwards" in line
    ledger.record("cli", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])


def test_a_glob_that_backtracks_matches_in_linear_time(tmp_path: Path, ledger) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    long_names = ["a" * 250 + suffix for suffix in (".txt", ".md", ".rst")]
    for name in [*long_names, "keep.txt", "aaaab"]:
        (corpus / name).write_text(f"Herons wade in the marsh ({name[-8:]}).\n", encoding="utf-8")
    result = cli_bounded("index", str(corpus), "--name", "g", "--exclude", "*a*a*a*a*b", home=tmp_path, timeout=BOUND_S)
    search = cli("search", "herons marsh", "--index", "g", "--json", "-k", "10", home=tmp_path)
    ids = sorted({hit["doc_id"] for hit in json.loads(search.stdout)["hits"]}) if search.returncode == 0 else []
    ok = result is not None and result.returncode == 0 and ids == sorted([*long_names, "keep.txt"])
    ledger.record("cli", outcome_of(result, ok))
    assert ok, (ids, None if result is None else result.stderr[-2000:])


@pytest.mark.parametrize("seed", ["-1", str(2**32 - 1), str(2**64)])
def test_a_seed_out_of_range_is_refused_before_the_model_loads(seed: str, tiny_corpus: Path, tmp_path: Path, ledger):
    args = ("ask", "Where is Warsaw?", "--corpus", str(tiny_corpus), "--model", "smollm2-135m-instruct")
    result = cli_bounded(*args, "--seed", seed, home=tmp_path, timeout=BOUND_S)
    ok = result is not None and result.returncode == 2 and "--seed" in result.stderr and "model:" not in result.stderr
    ledger.record("cli", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])


@pytest.mark.parametrize(("path", "what"), [("/dev/zero", "a device"), ("/dev/null", "a device"), ("fifo", "a FIFO")])
def test_a_model_that_is_not_a_file_says_what_it_is(
    path: str, what: str, tiny_corpus: Path, tmp_path: Path, ledger
) -> None:
    if path == "fifo":
        os.mkfifo(tmp_path / "model.gguf")  # opening it to read would wait for a writer
        path = str(tmp_path / "model.gguf")
    args = ("ask", "Where is Warsaw?", "--corpus", str(tiny_corpus), "--model", path)
    result = cli_bounded(*args, home=tmp_path, timeout=BOUND_S)
    line = one_line_error(result) if result is not None else None
    ok = line is not None and f"it is {what}" in line and "folder" not in line
    ledger.record("cli", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-2000:])
