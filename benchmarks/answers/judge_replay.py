"""The support check's judge asked again over the answers of saved runs, with no agent run (issue 74).

    python -m benchmarks.answers.judge_replay RUN_DIR [RUN_DIR ...] [--prompt FILE] [--show]

For every open answer of the runs (a Final that stood, not an abstention, nor yes/no or a choice between named
options, which the check does not weigh), the judge of checks/support.py is
given what the run gave it, or would have: the question, the answer and the first sentences read that hold the
answer. The answer's outcome sorts it: right (an answerable question answered right), wrong (answered wrong) or
unanswerable (every answer to a question the documents cannot answer). A judge worth its call says "no" to most
unanswerable answers and to almost no right one. Prints, per group, how many the judge said "no" to.

This costs one short model call an answer (a few seconds on a CPU), so a judge prompt can be tuned on the tuning
split's runs without running the agent again: `--prompt FILE` is a TOML file with `system` and `user` strings (the
user's with {question}, {answer} and {sentences}), as the `[support]` table of prompt_files/answer_checks.toml,
which is the default. The judge is the default model under the llama.cpp backend (`--model`, `--threads`).
The named-identifier test of the check needs the corpus and is not replayed: its verdicts are the run's own.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

GROUPS = ("right", "wrong", "unanswerable")


def answers(run: Path) -> list[dict[str, Any]]:
    """The answered rows of a run folder, each with the Observations its run read."""
    from offline_agent.eval.results import RunFolder

    found = []
    for row in RunFolder(run).read_results():
        if row.get("prediction") is None or row.get("abstained"):
            continue
        steps = (row.get("trajectory") or {}).get("steps") or ()
        read = [step["observation"] for step in steps if step.get("observation")]  # as the check reads them
        group = "unanswerable" if not row.get("answerable", True) else ("right" if row.get("em") else "wrong")
        found.append(
            {"id": row["id"], "question": row["question"], "answer": row["prediction"], "read": read, "group": group}
        )
    return found


def judge_texts(path: Path) -> dict[str, str]:
    """The judge's `system` and `user` texts from a TOML file."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    texts = tomllib.loads(path.read_text(encoding="utf-8"))
    return {"system": texts["system"], "user": texts["user"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders of `offline-agent eval` (results.jsonl)")
    parser.add_argument("--prompt", type=Path, help="a TOML file with the judge's `system` and `user` [the product's]")
    parser.add_argument("--model", default=None, help="the judge's model [the default model]")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads [every core]")
    parser.add_argument("--show", action="store_true", help="print every verdict")
    args = parser.parse_args()

    from offline_agent.answer_form import answer_form
    from offline_agent.checks.support import YES_OR_NO, judge_prompt, sentences_holding
    from offline_agent.errors import OfflineAgentError, StepParseError
    from offline_agent.grounding import YES_NO
    from offline_agent.prompts import render_chat
    from offline_agent.runner import load_backend

    texts = judge_texts(args.prompt) if args.prompt else None  # None: the product's, as judge_prompt reads it
    try:
        rows = [row for run in args.runs for row in answers(run)]
    except OfflineAgentError as exc:
        parser.error(str(exc))
    backend = load_backend(None, args.model, **({"threads": args.threads} if args.threads else {}))
    said: dict[str, Counter[str]] = {group: Counter() for group in GROUPS}
    for row in rows:
        if row["answer"].strip() in YES_NO or answer_form(row["question"]).kind != "open":
            said[row["group"]]["not open"] += 1  # the check weighs only open answers (verify's checks the others)
            continue
        sentences = sentences_holding(row["answer"], row["read"])
        if not sentences:  # an answer taken from the question: the check has nothing to judge
            said[row["group"]]["nothing to judge"] += 1
            continue
        system, user = judge_prompt(row["question"], row["answer"], sentences, texts)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        prompt = render_chat(backend.chat_template, messages, bos_token=backend.bos_token, eos_token=backend.eos_token)
        text = backend.complete(prompt, grammar=YES_OR_NO.gbnf, max_tokens=4, seed=0).text
        try:
            word = YES_OR_NO.parse(text)
        except StepParseError:  # the grammar allows only the two words; a reply cut short is neither
            word = "none"
        said[row["group"]][word] += 1
        if args.show:
            print(f"{row['group']:>12}  {word:>3}  {row['id']}  {row['question']}  -> {row['answer']}")
    print("| answers | judged | said no | said yes | not open | nothing to judge | no word |")
    print("|---|---|---|---|---|---|---|")
    for group in GROUPS:
        counts = said[group]
        judged = counts["no"] + counts["yes"]
        share = f" ({100 * counts['no'] / judged:.0f}%)" if judged else ""
        rest = f"{counts['not open']} | {counts['nothing to judge']} | {counts['none']}"
        print(f"| {group} | {judged} | {counts['no']}{share} | {counts['yes']} | {rest} |")


if __name__ == "__main__":
    main()
