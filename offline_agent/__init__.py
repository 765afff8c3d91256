"""offline_agent: grammar-constrained question-answering agents on local models, with no network."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
