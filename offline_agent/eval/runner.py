"""The resumable evaluation runner behind `offline-agent eval`: a dataset, a model, an agent, a run folder.

`prepare_evaluation` checks everything that can be checked before the first question (the agent name, the
dataset, the setting and its corpus, the run folder and its configuration), building the backend through the
backend registry (`backends.build_backend`) unless one is handed in (tests pass a ScriptedBackend). `EvalRun.run`
then answers the questions not yet in results.jsonl, appending one line per question in dataset order.

With `concurrency` N > 1 (a server backend that batches) or llamacpp's `--parallel N` (N sequences decoded
together in one llama.cpp context, backends/batched.py), N questions are in flight at once on worker threads, and
a finished question's thread takes the next question at once; their result lines are still written in dataset
order (a finished question waits for the ones before it), so the file looks exactly as a sequential run would
leave it, and a resume skips what was written. Each question's run depends only on the question, the
configuration and the seed, so the answers are the same as with N = 1 (at temperature 0; sampling draws from the
same distribution). Other in-process backends run one completion at a time and refuse N > 1.

A model that fails mid-run (ModelError) or an interrupt stops the run between questions: what was written
stays, summary.json is brought up to date, and the same command resumes.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from offline_agent._version import __version__
from offline_agent.agents import AgentSettings, KnowAgentOptions, Strategy, agent_class, agent_settings
from offline_agent.backends.registry import BackendOptions, backend_entry, canonical_backend_name
from offline_agent.errors import ConfigError, ModelError, OfflineAgentError
from offline_agent.eval.corpora import EvalCorpus, default_pool, open_eval_corpus, resolve_setting
from offline_agent.eval.datasets import Dataset, QARecord, load_dataset
from offline_agent.eval.hotpot import sentence_table, with_fact_fields
from offline_agent.eval.results import RunFolder
from offline_agent.eval.scoring import result_row, summarize
from offline_agent.outputs import check_writable_folder
from offline_agent.steps import Trajectory
from offline_agent.tools import DEFAULT_TOOLS, build_tools

StatusFn = Callable[[str], None]


@dataclass
class EvalOptions:
    """Everything `offline-agent eval` takes; all of it is recorded in config.json.

    `settings` is what runs (agents.AgentSettings: the strategy, the profile its options came from, the run
    config and the strategy's options); the default is the product's, the `answer` profile."""

    dataset: Path
    settings: AgentSettings = field(default_factory=agent_settings)
    model: str | None = None
    setting: str | None = None
    pool: Path | None = None
    limit: int | None = None
    out: Path | None = None
    context_size: int | None = None
    tools: tuple[str, ...] = DEFAULT_TOOLS
    backend: str = "llamacpp"
    # The backend's own settings (gpu_layers, threads, server_url, ...); model, context_size and seed are above.
    backend_options: BackendOptions = field(default_factory=BackendOptions)
    concurrency: int = 1  # questions in flight at once (a server backend, or llamacpp with --parallel)

    def __post_init__(self) -> None:
        self.dataset = Path(self.dataset)
        self.pool = None if self.pool is None else Path(self.pool)
        self.out = None if self.out is None else Path(self.out)
        self.tools = tuple(self.tools)
        self.backend = canonical_backend_name(self.backend)
        if self.concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")
        parallel = self.backend_options.parallel or 1
        if parallel > 1 and self.concurrency not in (1, parallel):
            raise ConfigError(
                f"--concurrency {self.concurrency} with --parallel {parallel}: the backend decodes {parallel} "
                "questions at once; leave --concurrency out"
            )

    @property
    def in_flight(self) -> int:
        """Questions answered at once: --concurrency, or as many as the backend's --parallel sequences."""
        return max(self.concurrency, self.backend_options.parallel or 1)

    @property
    def agent(self) -> str:
        return self.settings.agent

    @property
    def seed(self) -> int:
        return self.settings.config.seed

    @property
    def grammar(self) -> bool:
        return self.settings.config.grammar

    def all_backend_options(self) -> BackendOptions:
        """The backend's settings with the model, context size and seed of the run."""
        return replace(self.backend_options, model=self.model, context_size=self.context_size, seed=self.seed)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("dataset", "pool", "out"):
            data[key] = None if data[key] is None else str(data[key])
        data["tools"] = list(self.tools)
        # The API key is never written to disk.
        data["backend_options"] = {k: v for k, v in data["backend_options"].items() if v is not None and k != "api_key"}
        return data


def default_out(options: EvalOptions, setting: str) -> Path:
    """runs/<dataset>-<setting>-<agent>-<model>[-backend][-nogrammar][-force][-seedS]: the same command finds the same
    folder (the backend is named unless it is llamacpp)."""
    from offline_agent.models import default_model_name

    if options.model:
        model_label = Path(options.model).stem if options.model.endswith(".gguf") else Path(options.model).name
    else:
        model_label = "server" if options.backend == "http" else default_model_name()
    parts = [options.dataset.stem, setting, options.agent, model_label]
    if options.backend != "llamacpp":
        parts.append(options.backend)
    if not options.grammar:
        parts.append("nogrammar")
    if options.settings.config.early_stopping != "generate":
        parts.append(options.settings.config.early_stopping)
    chosen = options.settings.options
    if isinstance(chosen, KnowAgentOptions) and chosen.action_graph:  # a graph of one's own: -<its file's stem>
        parts.append(Path(chosen.action_graph).stem)
    if options.seed:
        parts.append(f"seed{options.seed}")
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))
    return Path("runs") / name


@dataclass
class EvalCallbacks:
    """Hooks for a progress view: before a question, and after its result line was written."""

    on_question: Callable[[QARecord], None] | None = None
    on_result: Callable[[dict[str, Any], list[dict[str, Any]]], None] | None = None


@dataclass
class EvalRun:
    """A prepared evaluation: the selected questions, the corpus, the loaded backend, the run folder."""

    options: EvalOptions
    dataset: Dataset
    selected: list[QARecord]
    corpus: EvalCorpus
    folder: RunFolder
    backend: Any
    config: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    resumed: bool = False
    sentences: dict[str, tuple[str, ...]] = field(default_factory=dict)  # title -> sentences, for sp ids

    @property
    def pending(self) -> list[QARecord]:
        done = {row["id"] for row in self.rows}
        return [record for record in self.selected if record.id not in done]

    def run(self, callbacks: EvalCallbacks | None = None) -> dict[str, Any]:
        """Answer the pending questions, appending each result; return the summary of the whole folder."""
        callbacks = callbacks or EvalCallbacks()
        in_flight = self.options.in_flight
        pool = ThreadPoolExecutor(in_flight, thread_name_prefix="eval-question") if in_flight > 1 else None
        stopped = True
        try:
            if pool is None:
                for record in self.pending:
                    if callbacks.on_question:
                        callbacks.on_question(record)
                    self._record(self.answer(record), callbacks)
            else:
                self._run_concurrently(pool, callbacks)
            stopped = False
            return self.write_summary()
        except ModelError as exc:
            self._write_summary_quietly()
            raise ModelError(
                f"{exc}; stopped after {self._done_count()} of {len(self.selected)} questions, kept in "
                f"{self.folder.results_path}: rerun the same command to resume"
            ) from None
        except KeyboardInterrupt:
            self._write_summary_quietly()
            raise
        finally:
            if pool is not None:
                self._stop_pool(pool, stopped)
            self.folder.unlock()

    def _stop_pool(self, pool: ThreadPoolExecutor, stopped: bool) -> None:
        """Questions not started are dropped. After an error or an interrupt, a backend that can (llamacpp with
        --parallel) ends the completions in flight at once and is waited for; a server's requests finish on
        their own (each has a timeout)."""
        cancel = getattr(self.backend, "cancel", None) if stopped else None
        if cancel is None:
            pool.shutdown(wait=False, cancel_futures=True)
            return
        cancel()
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            resume = getattr(self.backend, "resume", None)
            if resume is not None:
                resume()

    def answer(self, record: QARecord) -> dict[str, Any]:
        """Run the agent on one question (fresh tools and state) and return its result row."""
        from offline_agent.runner import Session
        from offline_agent.sources import attach_sources

        settings = self.options.settings
        session = Session.from_settings(
            settings,
            backend=self.backend,
            index=self.corpus.index_for(record),
            corpus=self.corpus.label_for(record),
            tools=self.options.tools,
        )
        trajectory = attach_sources(session.ask(record.question, settings.config), session.index)
        uses_tools = agent_class(self.options.agent).uses_tools
        return result_row(
            record, trajectory, uses_tools=uses_tools, sentences=self.sentences, capabilities=self.backend.capabilities
        )

    def _record(self, row: dict[str, Any], callbacks: EvalCallbacks) -> None:
        self.folder.append(row)
        self.rows.append(row)
        self.folder.write_predictions(self.rows)
        if callbacks.on_result:
            callbacks.on_result(row, self.rows)

    def _run_concurrently(self, pool: ThreadPoolExecutor, callbacks: EvalCallbacks) -> None:
        """Keep `in_flight` questions running, starting the next as soon as any finishes; write each result once
        all the questions before it are written. A question that failed stops the run at once. The loop ends only
        when no question is left to start and every started one is written, however many finish at once."""
        ordered: deque[Future[dict[str, Any]]] = deque()  # started, not yet written, in dataset order
        records = iter(self.pending)
        while True:
            for future in ordered:
                if future.done() and future.exception() is not None:
                    raise future.exception()  # type: ignore[misc]
            while ordered and ordered[0].done():
                self._record(ordered.popleft().result(), callbacks)
            running = [future for future in ordered if not future.done()]
            while len(running) < self.options.in_flight and (record := next(records, None)) is not None:
                if callbacks.on_question:
                    callbacks.on_question(record)
                future = pool.submit(self.answer, record)
                running.append(future)
                ordered.append(future)
            if not ordered:
                return
            if running:
                wait(running, return_when=FIRST_COMPLETED)

    def _done_count(self) -> int:
        return len(self.selected) - len(self.pending)

    def summary(self) -> dict[str, Any]:
        """The summary of every result in the folder, with what identifies the run."""
        summary = summarize(self.rows)
        summary["run"] = {
            "folder": str(self.folder.path),
            "agent": self.options.agent,
            "model": self.config["model"].get("name"),
            "setting": self.corpus.setting,
            "grammar": self.config["grammar"],
            "seed": self.options.seed,
            "selected": len(self.selected),
            "pending": len(self.pending),
            "version": __version__,
        }
        return summary

    def write_summary(self) -> dict[str, Any]:
        summary = self.summary()
        self.folder.write_summary(summary)
        self.folder.write_predictions(self.rows)
        return summary

    def _write_summary_quietly(self) -> None:
        # The results are safe either way; a summary that cannot be written must not hide why the run stopped.
        with contextlib.suppress(OfflineAgentError, OSError):
            self.write_summary()


def prepare_evaluation(options: EvalOptions, *, backend: Any | None = None, status: StatusFn | None = None) -> EvalRun:
    """Check the options, read the dataset, build the corpus, load the model, and claim the run folder."""
    say = status or (lambda message: None)
    agent_cls = agent_class(options.agent)
    if backend is None:
        _check_concurrency(options, backend_entry(options.backend).in_process, options.backend)
    dataset = load_dataset(options.dataset)
    if options.limit is not None and options.limit < 1:
        raise ConfigError("--limit must be at least 1")
    selected = dataset.records[: options.limit] if options.limit else list(dataset.records)
    pool = options.pool
    if pool is None and options.setting != "distractor":
        pool = default_pool(dataset)
    setting = resolve_setting(options.setting, dataset, pool)
    folder = RunFolder(options.out or default_out(options, setting))
    check_writable_folder(folder.path, "run folder")  # a path under a regular file fails now, clearly
    folder.read_results(repair=False)  # a broken results file fails now, before the model loads
    say(f"dataset: {dataset.path} ({len(dataset)} questions, {dataset.format}); running {len(selected)}")
    corpus = open_eval_corpus(setting, dataset, pool)
    say(f"corpus: {corpus.description}" + (f" ({corpus.passages} passages)" if corpus.passages else ""))
    folder.lock()
    try:
        if backend is None:
            from offline_agent.backends.registry import build_backend

            backend = build_backend(options.backend, options.all_backend_options())
        _check_concurrency(options, not backend.capabilities.concurrent_requests, backend.name, options.in_flight)
        described = backend.describe()
        where = described.get("path") or described.get("url")
        say(f"model: {described.get('name')} ({where}; backend {backend.name})")
        from offline_agent.runner import agent_tools

        search = options.settings.options.search_settings()
        tools = build_tools(corpus.index_for(selected[0]), agent_tools(agent_cls, options.tools), search)
        probe = options.settings.build(backend, tools)
        config = _config(options, dataset, corpus, probe, described, pool)
        resumed = folder.claim(config)
        rows = folder.read_results(repair=True)
    except BaseException:
        folder.unlock()
        raise
    if folder.torn_bytes:
        say(f"repaired {folder.results_path}: cut off a torn last line ({folder.torn_bytes} bytes)")
    sentences = sentence_table(dataset)
    by_id = {record.id: record for record in dataset.records}
    rows = [with_fact_fields(row, by_id.get(str(row["id"])), sentences) for row in rows]  # rows from before sp
    return EvalRun(
        options, dataset, selected, corpus, folder, backend, config, rows=rows, resumed=resumed, sentences=sentences
    )


def _check_concurrency(options: EvalOptions, one_at_a_time: bool, name: str, in_flight: int | None = None) -> None:
    wanted = in_flight or options.concurrency
    if wanted > 1 and one_at_a_time:
        flag = "--concurrency" if options.concurrency > 1 else "--parallel"
        raise ConfigError(
            f"{flag} {wanted} needs a backend that takes several requests at once; backend "
            f"{name!r} runs the model in this process, one completion at a time (use --backend http with a "
            "server that batches, llamacpp with --parallel, or --concurrency 1)"
        )


def _config(
    options: EvalOptions,
    dataset: Dataset,
    corpus: EvalCorpus,
    probe: Strategy,
    model: dict[str, Any],
    pool: Path | None,
) -> dict[str, Any]:
    system = probe.prompt_parts("").system
    return {
        "version": __version__,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "dataset": {
            "path": str(dataset.path),
            "sha256": dataset.sha256,
            "format": dataset.format,
            "questions": len(dataset),
        },
        "setting": corpus.setting,
        "corpus": {
            "description": corpus.description,
            "sha256": corpus.sha256,
            "passages": corpus.passages or None,
            "pool": None if pool is None else str(pool),
        },
        "agent": options.agent,
        # The run config and the strategy's options in one mapping, as the probe runs them (a strategy may bound
        # the run config: cot and standard take one step); the options again on their own, and their profile.
        "agent_config": {**asdict(probe.config), **probe.options.to_dict()},
        "strategy_options": probe.options.to_dict(),
        "profile": options.settings.profile,
        "backend": canonical_backend_name(probe.backend.name),
        "capabilities": asdict(probe.backend.capabilities),
        "model": {**model, "id": model.get("sha256") or model.get("name")},
        "grammar": "on" if options.grammar else "off",
        "grammar_sha256": probe.grammar_sha256,
        "prompt_sha256": hashlib.sha256(system.encode("utf-8")).hexdigest(),
        "seed": options.seed,
        "tools": list(probe.tools.names) if probe.uses_tools else [],
        "options": options.to_dict(),
    }


def run_evaluation(
    options: EvalOptions,
    *,
    backend: Any | None = None,
    callbacks: EvalCallbacks | None = None,
    status: StatusFn | None = None,
) -> dict[str, Any]:
    """Prepare and run an evaluation in one call; returns the summary (also written to summary.json)."""
    return prepare_evaluation(options, backend=backend, status=status).run(callbacks)


def trajectory_of(row: dict[str, Any]) -> Trajectory:
    """The Trajectory stored in a result row."""
    return Trajectory.from_dict(row["trajectory"])
