"""BM25 variants as pure formulas over numpy arrays: term weights are computed once, at build time.

Each variant turns document frequencies into idf values and (tf, document length) pairs into the weight a
posting contributes to a document's score. The arithmetic follows the reference implementation operation by
operation, in float64, so that the stored float32 weights reproduce it:

With norm = k1 * (1 - b + b * dl / avgdl):
- `okapi`: rank-bm25's BM25Okapi. idf = ln(N - df + 0.5) - ln(df + 0.5), and negative values are floored to
  epsilon times the mean idf of the vocabulary; weight = idf * tf * (k1 + 1) / (tf + norm).
- `lucene`: Lucene's BM25 since 8.0. idf = ln(1 + (N - df + 0.5) / (df + 0.5));
  weight = idf * tf / (tf + norm).
- `plus`: rank-bm25's BM25Plus. idf = ln((N + 1) / df); weight = idf * (delta + tf * (k1 + 1) / (norm + tf)).
  BM25Plus gives every document idf * delta for every query term, present or not; that part is added to each
  hit at query time (`query_constant`), so the scores of matching documents equal rank-bm25's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from offline_agent.errors import ConfigError

VARIANTS = ("lucene", "okapi", "plus")


@dataclass(frozen=True)
class BM25Params:
    """The scoring variant and its constants."""

    variant: str = "okapi"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    delta: float = 1.0

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ConfigError(f"unknown BM25 variant {self.variant!r}; choose from {list(VARIANTS)}")
        if self.k1 < 0 or not 0 <= self.b <= 1:
            raise ConfigError(f"need k1 >= 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)

    def idf(self, df: np.ndarray, n_docs: int) -> np.ndarray:
        """idf (float64) for each document frequency in `df` (all > 0), given `n_docs` live documents."""
        df = df.astype(np.float64)
        if self.variant == "okapi":
            idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
            if len(idf):
                negative = idf < 0
                if negative.any():
                    idf[negative] = self.epsilon * (idf.sum() / len(idf))
            return idf
        if self.variant == "lucene":
            return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        return np.log((n_docs + 1) / df)

    def weights(self, idf: np.ndarray, tf: np.ndarray, dl: np.ndarray, avgdl: float) -> np.ndarray:
        """Posting weights (float64) from per-posting idf, term frequency and document length."""
        tf = tf.astype(np.float64)
        norm = self.k1 * (1 - self.b + self.b * dl.astype(np.float64) / avgdl)
        if self.variant == "okapi":
            return idf * (tf * (self.k1 + 1) / (tf + norm))
        if self.variant == "lucene":
            return idf * (tf / (tf + norm))
        return idf * ((tf * (self.k1 + 1)) / (norm + tf))

    def query_constant(self, idf: np.ndarray, counts: np.ndarray) -> float:
        """What every hit gets regardless of which query terms it holds (BM25+'s delta; 0 otherwise)."""
        if self.variant != "plus" or not len(idf):
            return 0.0
        return float(self.delta * np.dot(idf, counts))
