"""One exception tree for the whole package, so callers catch one root and the CLI maps it once.

```
OfflineAgentError
├── ConfigError (also ValueError)   unknown backend, agent, model, option; the message lists the valid ones
├── ModelError                      model file missing, corrupt, wrong checksum, cannot load         -> fatal
├── GrammarError                    a grammar that does not compile (fail closed, at load time)       -> fatal
├── RetrievalError                  index missing, corrupt, from another version; unreadable corpus   -> fatal
├── ContextOverflowError            the prompt and the next step no longer fit the context window   -> stop: error
├── StepParseError                  model text that the Lark parser rejects (label, line, column)     -> recorded
└── ToolError                       a tool that failed on its argument                                 -> Observation
```
Recoverable errors (StepParseError, ToolError) are recorded on the step and the loop goes on; the others carry
a one-line message a user can act on.
"""

from __future__ import annotations


class OfflineAgentError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(OfflineAgentError, ValueError):
    """An unknown name or a bad option; the message lists the valid choices."""


class ModelError(OfflineAgentError):
    """A model file that is missing, corrupt, has the wrong checksum, or cannot be loaded."""


class GrammarError(OfflineAgentError):
    """A grammar that does not compile; raised at start, never replaced by unconstrained output."""


class RetrievalError(OfflineAgentError):
    """A corpus or index that cannot be read: missing, corrupt, empty, or from another version."""


class ContextOverflowError(OfflineAgentError):
    """The prompt plus the next step would not fit the model's context window; the run stops with an error."""


class ToolError(OfflineAgentError):
    """A tool that failed on its argument; the loop turns it into an Observation."""


class StepParseError(OfflineAgentError):
    """Model text that the step parser rejects, with a label and the position that failed."""

    def __init__(
        self, message: str, *, label: str = "invalid", line: int = 0, column: int = 0, context: str = ""
    ) -> None:
        super().__init__(message)
        self.label = label
        self.line = line
        self.column = column
        self.context = context

    def to_dict(self) -> dict[str, object]:
        return {
            "message": str(self),
            "label": self.label,
            "line": self.line,
            "column": self.column,
            "context": self.context,
        }
