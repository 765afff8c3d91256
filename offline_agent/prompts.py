"""Prompt text, kept apart from inference so it can be tested without a model.

The instructions and worked examples live as package data in `offline_agent/prompt_files/` (written for this project;
the examples use made-up documents so a model cannot copy their facts into an answer). A prompt is the model's
chat template rendered with a system message and the question, followed by the growing scratchpad of steps and
Observations: each step only appends, so llama.cpp can reuse its cache for everything before.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from offline_agent.errors import ConfigError

_PROMPT_DIR = Path(__file__).resolve().parent / "prompt_files"

# What a special token's text looks like (`<|im_end|>`, `<start_of_turn>`, `<s>`, `[INST]`): where a chat template's
# own text may hold one, the backend is asked whether it is one of its model's.
_SPECIAL_LIKE = re.compile(r"<[^<>\s]{1,64}>|\[/?[A-Z_]{2,16}\]")

# ChatML, for models registered with chat_format "chatml" and for the scripted backend's prompts.
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@lru_cache(maxsize=16)
def prompt_text(name: str) -> str:
    """A prompt file shipped with the package, by file name."""
    path = _PROMPT_DIR / name
    if not path.is_file():
        raise ConfigError(f"unknown prompt {name!r}; choose from {sorted(p.name for p in _PROMPT_DIR.glob('*.txt'))}")
    return path.read_text(encoding="utf-8")


@lru_cache(maxsize=8)
def prompt_table(name: str, family: str) -> dict[str, str]:
    """One table of a TOML prompt file shipped with the package (`answer_checks.toml`'s "kinds", say): its texts
    by key. A missing file or table is a ConfigError naming it."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    path = _PROMPT_DIR / name
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the prompt file {name}: {exc}") from None
    if not isinstance(table.get(family), dict):
        raise ConfigError(f"the prompt file {name} has no table [{family}]; it has {sorted(table)}")
    return table[family]


# A prompt file's line that only the `abstain` option keeps (without this mark): when to write the abstention.
ABSTAIN_MARK = "?abstain "


def with_abstention(text: str, abstain: bool) -> str:
    """A prompt file's text with its ABSTAIN_MARK lines kept (unmarked) when `abstain`, left out otherwise."""
    lines = text.split("\n")
    if abstain:
        return "\n".join(line.removeprefix(ABSTAIN_MARK) for line in lines)
    return "\n".join(line for line in lines if not line.startswith(ABSTAIN_MARK))


def describe_tools(tools: Sequence[Any]) -> str:
    """One line per tool: how to call it, and what it does."""
    lines = []
    for tool in tools:
        example = getattr(tool, "example", "") or ("..." if tool.schema is None else "{...}")
        lines.append(f"- {tool.name}[{example}]: {tool.description}")
    return "\n".join(lines)


@dataclass(frozen=True)
class PromptParts:
    """The fixed part of a run's prompt: the system message and the user message."""

    system: str
    user: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.system}\0{self.user}".encode()).hexdigest()


def agent_prompt(
    name: str,
    question: str,
    tools: Sequence[Any],
    *,
    max_steps: int,
    history: Sequence[Any] = (),
    abstain: bool = False,
) -> PromptParts:
    """A strategy's instructions (`<name>_system.txt`) with the run's tools and examples, and the question.

    `history` holds earlier turns of a chat (objects with `question` and `answer`), shown before the question in
    the user message; with none, the user message is the question alone, as before chat existed. `abstain` keeps
    the instructions' line on when to abstain (`with_abstention`).
    """
    system = Template(with_abstention(prompt_text(f"{name}_system.txt"), abstain)).substitute(
        tools=describe_tools(tools),
        max_steps=max_steps,
        examples=prompt_text(f"{name}_examples.txt").strip(),
    )
    return PromptParts(system=system.strip(), user=history_text(history) + f"Question: {question.strip()}")


def history_text(history: Sequence[Any]) -> str:
    """Earlier turns as the user message shows them, ending in a blank line; empty without turns."""
    if not history:
        return ""
    lines = ["Earlier in this conversation:"]
    for turn in history:
        answer = turn.answer if turn.answer is not None else "(no answer)"
        lines += [f"Question: {turn.question.strip()}", f"Answer: {answer.strip()}"]
    return "\n".join(lines) + "\n\n"


class Prompt(str):
    """A prompt that knows which parts its chat template wrote (`special`: (start, end) spans): only there may a
    backend read special tokens (`<|im_end|>`, `<|im_start|>`) from the text. Everything else, the messages'
    contents and whatever is appended (the scratchpad: steps and Observations), is read as plain text, so a
    document that spells a control token cannot close the turn and open one of its own.

    Adding a plain string keeps the spans (the addition is plain text); slicing keeps what lies inside. Any other
    way of making a new string gives a plain `str`, which backends read as they always did (special tokens
    anywhere: a raw prompt a user wrote)."""

    special: tuple[tuple[int, int], ...]

    def __new__(cls, text: str, special: Sequence[tuple[int, int]] = ()) -> Prompt:
        made = super().__new__(cls, text)
        made.special = tuple((start, end) for start, end in special if end > start)
        return made

    def __add__(self, other: object) -> Prompt:
        if not isinstance(other, str):
            return NotImplemented
        shift = len(self)
        more = [(start + shift, end + shift) for start, end in getattr(other, "special", ())]
        return Prompt(str.__add__(self, other), [*self.special, *more])

    def __radd__(self, other: object) -> Prompt:
        if not isinstance(other, str):
            return NotImplemented
        shift = len(other)
        return Prompt(other + str(self), [(start + shift, end + shift) for start, end in self.special])

    def __getitem__(self, key: Any) -> str:
        text = str.__getitem__(self, key)
        if not isinstance(key, slice) or key.step not in (None, 1):
            return text
        start, stop, _ = key.indices(len(self))
        spans = [(max(a, start) - start, min(b, stop) - start) for a, b in self.special if a < stop and b > start]
        return Prompt(text, spans)

    def fragments(self, is_special: Callable[[str], bool]) -> list[tuple[str, bool]]:
        """The text cut as a tokenizer cuts it before its model sees it: (a special token's text, True) where the
        template wrote one (`is_special` says which strings in its parts are), and (the plain text between, False).
        For an ordinary prompt these are the very cuts a tokenizer reading special tokens anywhere makes, so its
        tokens are the same; a special token's text in a content or an Observation stays plain text."""
        out: list[tuple[str, bool]] = []
        plain = ""
        for piece, written in self.pieces():
            at = 0
            for match in _SPECIAL_LIKE.finditer(piece) if written else ():
                if is_special(match.group()):
                    if plain or match.start() > at:
                        out.append((plain + piece[at : match.start()], False))
                    out.append((match.group(), True))
                    plain, at = "", match.end()
            plain += piece[at:]
        if plain:
            out.append((plain, False))
        return out

    def neutralized(self, also: Sequence[str | None] = ()) -> str:
        """The prompt as plain text for a tokenizer that reads special tokens anywhere (a model server's): every
        special token's text that the template wrote (and each of `also`: the BOS and EOS texts) is broken with a
        word joiner (U+2060) where a content or the scratchpad spells it, so that it stays text. What the template
        wrote, and any text that spells none of them, is unchanged."""
        written = {match.group() for piece, ours in self.pieces() if ours for match in _SPECIAL_LIKE.finditer(piece)}
        written |= {text for text in also if text}
        if not written:
            return str(self)
        spelled = re.compile("|".join(map(re.escape, sorted(written, key=len, reverse=True))))
        joined = (
            piece if ours else spelled.sub(lambda m: m.group()[0] + "\u2060" + m.group()[1:], piece)
            for piece, ours in self.pieces()
        )
        return "".join(joined)

    def pieces(self) -> list[tuple[str, bool]]:
        """The text in order, as (piece, whether the chat template wrote it)."""
        out: list[tuple[str, bool]] = []
        at = 0
        for start, end in self.special:
            if start > at:
                out.append((str.__getitem__(self, slice(at, start)), False))
            out.append((str.__getitem__(self, slice(start, end)), True))
            at = end
        if at < len(self):
            out.append((str.__getitem__(self, slice(at, None)), False))
        return out


def prompt_fragments(text: str, is_special: Callable[[str], bool]) -> list[tuple[str, bool]]:
    """A prompt cut for its tokenizer (`Prompt.fragments`); a plain string is one piece in which special tokens
    may be read anywhere (True), as a raw prompt always was."""
    if isinstance(text, Prompt):
        return text.fragments(is_special)
    return [(text, True)] if text else []


def render_chat(
    template: str | None,
    messages: Sequence[dict[str, str]],
    *,
    bos_token: str | None = None,
    eos_token: str | None = None,
) -> Prompt:
    """Render `messages` with a model's Jinja chat template, ending where the assistant's turn begins.

    The result is a `Prompt` whose special spans are what the template wrote around the contents: the template is
    rendered once more with a marker in place of each content, and the text between the markers is the template's.
    A template that changes a content as it writes it (trims it, say) cannot be split that way: then the whole
    prompt is the template's, as every prompt was before (special tokens read anywhere). Without a template (a base
    model, or a raw prompt), the messages are joined as plain paragraphs, with nothing special.
    """
    if not template:
        return Prompt("\n\n".join(message["content"] for message in messages) + "\n\n")
    compiled = _compiled(template)
    tokens = {"add_generation_prompt": True, "bos_token": bos_token or "", "eos_token": eos_token or ""}
    rendered = compiled.render(messages=list(messages), **tokens)
    marks = [f"\ue000{number}\ue001" for number in range(len(messages))]
    skeleton = compiled.render(
        messages=[{**m, "content": mark} for m, mark in zip(messages, marks, strict=True)], **tokens
    )
    text, spans, at = "", [], 0
    for message, mark in zip(messages, marks, strict=True):
        found = skeleton.find(mark, at)
        if found < 0:
            return Prompt(rendered, [(0, len(rendered))])
        spans.append((len(text), len(text) + found - at))
        text += skeleton[at:found] + message["content"]
        at = found + len(mark)
    spans.append((len(text), len(text) + len(skeleton) - at))
    text += skeleton[at:]
    if text != rendered:
        return Prompt(rendered, [(0, len(rendered))])
    return Prompt(rendered, spans)


@lru_cache(maxsize=8)
def _compiled(template: str) -> Any:
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise ConfigError(f"the chat template refused the messages: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        return env.from_string(template)
    except TemplateError as exc:
        raise ConfigError(f"the model's chat template does not compile: {exc}") from exc


def scratchpad_entry(step_text: str, observation: str | None, note: str | None = None) -> str:
    """What one step adds to the scratchpad: its text, then the Observation line if a tool ran.

    `note` (the loop's step budget, say) is appended to the Observation line in parentheses.
    """
    entry = step_text.rstrip("\n") + "\n"
    if observation is not None:
        entry += f"Observation: {observation}" + (f" ({note})" if note else "") + "\n"
    return entry
