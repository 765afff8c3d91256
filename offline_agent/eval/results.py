"""The run folder: config.json, results.jsonl and summary.json, written so that they are never corrupt.

- results.jsonl is only ever appended to, one whole line per question, written and fsynced before the next
  question starts. If a write fails (a full disk), the file is cut back to its size before the write, so it
  still holds whole lines only. A torn last line left by a crash or a power cut (no newline at the end, or
  not JSON) is detected when the folder is opened; `read_results(repair=True)` cuts it off, and readers that
  must not write (the report) skip it.
- config.json records what the run is (model, dataset, corpus, agent, grammar and prompt hashes, seed, ...);
  a rerun whose configuration differs in any field that can change an answer is refused, with the fields
  named. The question limit, the output folder and machine details (paths, GPU layers) may change. A field added
  to the config after a folder was written is read as the value that reproduces how that folder's runs behaved
  (ADDED_FIELDS), so old folders stay resumable with the settings they were run with. `agent_config` holds the
  run config and the strategy's options in one mapping; a setting an old folder records that the strategy does
  not have (folders written before strategies declared their own options record every strategy's) is not
  compared, since it never changed that strategy's answers. The profile is a name for the options, not compared.
- config.json, summary.json and predictions.json (HotpotQA's official format, rewritten after every appended
  result) are replaced atomically (written aside, fsynced, renamed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from offline_agent import jsonio
from offline_agent.errors import OfflineAgentError
from offline_agent.outputs import append_line, describe_write_error

CONFIG = "config.json"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
PREDICTIONS = "predictions.json"
LOCK = ".lock"

# Fields of config.json that must match for a run folder to be resumed (dotted paths).
COMPARED_FIELDS = (
    "version",
    "dataset.sha256",
    "setting",
    "corpus.sha256",
    "agent",
    "agent_config",
    "backend",
    "model.id",
    "model.context_size",
    "grammar",
    "grammar_sha256",
    "prompt_sha256",
    "seed",
    "tools",
)

# Fields added to config.json after run folders existed, each with the value that reproduces the runs written
# before it: early stopping always generated a Final-only last step, no step budget was shown to the model, and
# the model ran in llama.cpp.
ADDED_FIELDS: dict[str, Any] = {
    "agent_config.early_stopping": "generate",
    "agent_config.budget_hint": False,
    "agent_config.grounded": False,
    "agent_config.search_k": 3,
    "agent_config.snippet": "head",
    "agent_config.title_boost": False,
    "agent_config.min_searches": 0,
    "agent_config.samples": 1,
    "agent_config.first_search": False,
    "agent_config.exclude_refused": False,
    "agent_config.fresh_calls": False,
    "agent_config.search_after_refusal": False,
    "agent_config.read_hop": False,
    "agent_config.scope": None,
    "agent_config.sentences_after": 0,
    "agent_config.section_sentences_after": 0,
    "agent_config.section_sentences": 0,
    "agent_config.section_defaults": False,
    "agent_config.search_with_question": False,
    "agent_config.without": "",
    "agent_config.abstain": False,
    "agent_config.support_check": False,
    "agent_config.search_spans": False,
    "backend": "llamacpp",  # before the backend registry, every run folder was made with llama.cpp
}


class ResultsError(OfflineAgentError):
    """A run folder that cannot be written, holds a broken results file, or belongs to another configuration."""


def _field(config: dict[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def with_added_fields(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a recorded config with each field it predates (ADDED_FIELDS) set to its value from before."""
    filled = json.loads(json.dumps(config))
    for dotted, value in ADDED_FIELDS.items():
        *parents, last = dotted.split(".")
        holder: Any = filled
        for part in parents:
            holder = holder.get(part) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and last not in holder:
            holder[last] = value
    return filled


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The compared fields whose values differ, as "field: OLD there, NEW now"."""
    old = with_added_fields(old)
    out = []
    for name in COMPARED_FIELDS:
        before, after = _field(old, name), _field(new, name)
        if before != after:
            if isinstance(before, dict) and isinstance(after, dict):
                # Only what the run has now: before strategies declared their own options, every folder
                # recorded all of them, those its strategy never read too (read_hop for react).
                keys = sorted(k for k in after if before.get(k) != after.get(k))
                out.extend(f"{name}.{k}: {before.get(k)!r} there, {after.get(k)!r} now" for k in keys)
            else:
                out.append(f"{name}: {_short(before)} there, {_short(after)} now")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


class RunFolder:
    """One run's folder: its config, its append-only results and its summary."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.config_path = self.path / CONFIG
        self.results_path = self.path / RESULTS
        self.summary_path = self.path / SUMMARY
        self.predictions_path = self.path / PREDICTIONS
        self.torn_bytes = 0
        self.duplicate_lines = 0  # result lines of a question already read (read_results keeps the first)
        self._lock_fd: int | None = None

    # ---- config ------------------------------------------------------------------------------------------
    def read_config(self) -> dict[str, Any] | None:
        """The recorded config, or None for a new folder."""
        if not self.config_path.exists():
            return None
        try:
            return jsonio.read_file(self.config_path)
        except (OSError, ValueError) as exc:
            raise ResultsError(f"cannot read {self.config_path}: {exc}; move the folder away to start over") from None

    def claim(self, config: dict[str, Any]) -> bool:
        """Record `config` in a new folder, or check that it matches the folder's; True when resuming."""
        old = self.read_config()
        if old is None:
            if self.results_path.exists() and self.results_path.stat().st_size > 0:
                raise ResultsError(
                    f"{self.path} holds results but no {CONFIG}; use another --out, or move the folder away"
                )
            self._write_atomic(self.config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")
            return False
        differences = config_differences(old, config)
        if differences:
            shown = "; ".join(differences[:3]) + (f"; and {len(differences) - 3} more" if len(differences) > 3 else "")
            raise ResultsError(
                f"{self.path} holds a run with another configuration ({shown}); "
                "use another --out, or delete the folder to start over"
            )
        return True

    def lock(self) -> None:
        """Hold the folder for this process, so that two runs never append to the same results file."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, as before
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            why = describe_write_error(self.path / LOCK, exc)
            raise ResultsError(f"cannot use the run folder {self.path}: {why}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ResultsError(
                f"another `offline-agent eval` is writing to {self.path}; wait for it or use another --out"
            ) from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __del__(self) -> None:
        self.unlock()

    # ---- results -----------------------------------------------------------------------------------------
    def read_results(self, *, repair: bool = False) -> list[dict[str, Any]]:
        """Every whole result line, one per question. A torn end (no final newline, or a last line that is not a
        result) is skipped, and cut off the file when `repair`; `self.torn_bytes` says how many bytes that was. A
        question's second line (a file appended to itself, two runs writing one folder) is not counted again: the
        first is kept, and `self.duplicate_lines` says how many were left out."""
        try:
            data = self.results_path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ResultsError(f"cannot read {self.results_path}: {exc.strerror or exc}") from None
        *lines, tail = data.split(b"\n")
        rows: list[dict[str, Any]] = []
        good_end = 0
        for number, line in enumerate(lines, start=1):
            if line.strip():
                row = _parse_row(line)
                if row is None:
                    if number == len(lines) and not tail:
                        break  # the last line is garbage: a crash while writing it
                    raise ResultsError(
                        f"{self.results_path} line {number} is not a result line; "
                        "something else changed the file: move it away to start over"
                    )
                rows.append(row)
            good_end += len(line) + 1
        self.torn_bytes = len(data) - good_end
        if self.torn_bytes and repair:
            self._truncate(good_end)
        seen: set[str] = set()
        unique = [row for row in rows if not (str(row.get("id")) in seen or seen.add(str(row.get("id"))))]
        self.duplicate_lines = len(rows) - len(unique)
        return unique

    def append(self, row: dict[str, Any]) -> None:
        """Append one whole line and fsync; on failure the file is cut back to its size before the write."""
        line = (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultsError(f"cannot open {self.results_path}: {exc.strerror or exc}") from None
        try:
            append_line(self.results_path, line)
        except OSError as exc:
            raise ResultsError(
                f"cannot write {self.results_path}: {exc.strerror or exc}; the file is intact "
                "(whole lines only): free space and rerun the same command to resume"
            ) from None

    def _truncate(self, size: int) -> None:
        try:
            with open(self.results_path, "r+b") as handle:
                handle.truncate(size)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise ResultsError(f"cannot repair {self.results_path}: {exc.strerror or exc}") from None

    # ---- summary -----------------------------------------------------------------------------------------
    def write_summary(self, summary: dict[str, Any]) -> None:
        self._write_atomic(self.summary_path, json.dumps(summary, indent=2, sort_keys=True) + "\n")

    def write_predictions(self, rows: list[dict[str, Any]]) -> None:
        """predictions.json in HotpotQA's official format, for every row so far."""
        from offline_agent.eval.hotpot import predictions

        self._write_atomic(self.predictions_path, json.dumps(predictions(rows), ensure_ascii=False) + "\n")

    def _write_atomic(self, path: Path, text: str) -> None:
        temporary = path.with_name(f".{path.name}.tmp")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None


def _parse_row(line: bytes) -> dict[str, Any] | None:
    try:
        row = jsonio.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) and "id" in row else None
