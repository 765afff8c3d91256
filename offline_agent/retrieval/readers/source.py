"""Source code and configuration files, read as text and titled by their path (relative to the folder indexed).

A code file rarely has a title line, and its path ("src/net/retry.py") is what a programmer searches by and
wants to see in a hit, so the title is the document id, which is that path. The suffixes are the common
programming, shell and query languages, and the usual configuration formats (`CODE_EXTENSIONS`); files with no
suffix (Makefile, Dockerfile) are already read by the text reader. A `.ts` file that is a video (an MPEG
transport stream), like any binary file, is skipped as binary.
"""

from __future__ import annotations

from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, decode_text

CODE_EXTENSIONS = frozenset(
    {
        # Python, JavaScript and TypeScript, and the web
        ".py", ".pyi", ".pyx", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".vue", ".svelte",
        ".css", ".scss", ".less",
        # compiled languages
        ".go", ".rs", ".java", ".kt", ".kts", ".scala", ".groovy", ".swift", ".dart", ".cs", ".fs", ".vb",
        ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".m", ".mm", ".zig", ".nim", ".d",
        # scripting, functional and data languages
        ".rb", ".php", ".pl", ".pm", ".lua", ".r", ".jl", ".hs", ".ml", ".mli", ".ex", ".exs", ".erl", ".clj",
        ".lisp", ".el", ".scm", ".tcl", ".awk", ".sql",
        # shells and build files
        ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".mk", ".cmake", ".gradle",
        # configuration and interface definitions
        ".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".properties", ".proto", ".graphql", ".tf",
    }
)  # fmt: skip


class SourceCodeReader:
    """Source and configuration files: UTF-8 text titled by its path."""

    name = "code"
    extensions = CODE_EXTENSIONS
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        return [Document(doc_id, doc_id, decode_text(data))], []
