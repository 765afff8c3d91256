"""offline_agent: grammar-constrained question-answering agents on local models, with no network."""

from __future__ import annotations

from offline_agent._version import __version__

__all__ = ["__version__"]
