"""What the first search shows, without a model: is the gold answer in the Observation, and how long is it?

For each question of the three development corpora, the search tool runs once with the question itself as the
query, under the answer profile's search settings (4 passages, sentence snippets, linked documents) and under the
variants named by --variants, and the Observation is checked for any accepted answer (normalized as eval's EM
normalizes, as a whole-word run). This is the reading half of a run that the model never gets to fix: an answer
that is not on the page cannot be copied from it. It prints, per corpus and variant, the questions whose answer
is in the Observation, and the Observation's mean length in characters (what the prompt pays for it).

    python -m benchmarks.answers.observation_bench                       # sample, pgdocs (index pgdocs-new), dev200
    python -m benchmarks.answers.observation_bench --corpora pgdocs --pgdocs-index pgdocs

`--dump FILE` writes every Observation as a JSON line (corpus, variant, question id, text): two commits' dumps
compared say which questions a change can reach at all (a run at `--threads 1` whose Observations are the same
answers the same).

A rise here is not a rise in EM: it says what the model is given to read. Variants are SearchSettings fields
(`sentences=3`) or `after=1`, which also shows the sentence after each chosen one (`after` is the
`sentences_after` setting).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from benchmarks.kit import DEV_CORPORA as CORPORA
from benchmarks.kit import holds
from offline_agent.agents.settings import agent_settings
from offline_agent.eval.datasets import load_dataset
from offline_agent.retrieval import open_corpus
from offline_agent.tools.corpus import CorpusSession, SearchSettings, SearchTool


def run(corpus: str, index: Any, questions: list[Any], variants: dict[str, SearchSettings], dump: Any = None) -> None:
    for name, settings in variants.items():
        found, chars = 0, 0
        for record in questions:
            session = CorpusSession(index, settings, question=record.question)
            observation = str(SearchTool(session)(record.question))
            found += holds(observation, record.answers or (record.answer,))
            if dump is not None:
                line = {"corpus": corpus, "variant": name, "id": record.id, "observation": observation}
                dump.write(json.dumps(line, ensure_ascii=False) + "\n")
            chars += len(observation)
        n = len(questions)
        print(f"| {corpus} | {name} | {found}/{n} ({100 * found / n:.1f}%) | {chars / n:.0f} |", flush=True)


def parse_variant(text: str, base: SearchSettings) -> tuple[str, SearchSettings]:
    """A variant ("after=1,sentences=3") of the answer profile's search settings, `base`."""
    fields: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        key = {"after": "sentences_after"}.get(key, key)
        fields[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return text, dataclasses.replace(base, **fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default="sample,pgdocs,dev200")
    parser.add_argument("--pgdocs-index", default="pgdocs-new", help="the name of the manual's index")
    parser.add_argument("--variants", default="after=1", help="';'-separated variants, e.g. 'after=1;sentences=3'")
    parser.add_argument("--dump", type=Path, help="write every Observation to this JSONL file")
    args = parser.parse_args()
    corpora = args.corpora.split(",")
    unknown = [corpus for corpus in corpora if corpus not in CORPORA]
    if unknown:
        parser.error(f"unknown corpus {unknown[0]!r}; choose from {', '.join(CORPORA)}")
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    base = agent_settings().options.search_settings()  # the answer profile's, as the default agent searches
    variants = dict([("profile", base), *(parse_variant(v, base) for v in args.variants.split(";") if v)])
    print("| corpus | variant | answer in the Observation | mean characters |")
    print("|---|---|---|---|")
    for corpus in corpora:
        questions_path, pool = CORPORA[corpus]
        if not questions_path.exists():
            print(f"| {corpus} | skipped: {questions_path} not found | | |")
            continue
        index = open_corpus(pool if pool is not None else args.pgdocs_index)
        run(corpus, index, list(load_dataset(questions_path)), variants, dump)
    if dump is not None:
        dump.close()


if __name__ == "__main__":
    main()
