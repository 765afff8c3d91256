"""Prompt text, kept apart from inference so it can be tested without a model.

The instructions and worked examples live as package data in `offline_agent/prompt_files/` (written for this project;
the examples use made-up documents so a model cannot copy their facts into an answer). A prompt is the model's
chat template rendered with a system message and the question, followed by the growing scratchpad of steps and
Observations: each step only appends, so llama.cpp can reuse its cache for everything before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from offline_agent.errors import ConfigError

_PROMPT_DIR = Path(__file__).resolve().parent / "prompt_files"

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
    name: str, question: str, tools: Sequence[Any], *, max_steps: int, history: Sequence[Any] = ()
) -> PromptParts:
    """A strategy's instructions (`<name>_system.txt`) with the run's tools and examples, and the question.

    `history` holds earlier turns of a chat (objects with `question` and `answer`), shown before the question in
    the user message; with none, the user message is the question alone, as before chat existed.
    """
    system = Template(prompt_text(f"{name}_system.txt")).substitute(
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


def render_chat(
    template: str | None,
    messages: Sequence[dict[str, str]],
    *,
    bos_token: str | None = None,
    eos_token: str | None = None,
) -> str:
    """Render `messages` with a model's Jinja chat template, ending where the assistant's turn begins.

    Without a template (a base model, or a raw prompt), the messages are joined as plain paragraphs.
    """
    if not template:
        return "\n\n".join(message["content"] for message in messages) + "\n\n"
    return _compiled(template).render(
        messages=list(messages),
        add_generation_prompt=True,
        bos_token=bos_token or "",
        eos_token=eos_token or "",
    )


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
