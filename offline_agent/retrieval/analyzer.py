"""Turns text into index terms, the same way at build time and at query time.

An index is only as good as the agreement between how its documents and its queries were tokenized, so the
analyzer's settings are saved inside every index (`to_dict`/`from_dict`) and rebuilt from there on load.

Steps, in order: Unicode normalization (NFKC by default), lowercasing, tokenization into runs of Unicode
letters and digits (the underscore and all punctuation split tokens), dropping tokens shorter than `min_len`
or longer than `max_len` characters, dropping stopwords, and optional Snowball stemming with PyStemmer.

Limits: scripts written without spaces (Chinese, Japanese, Thai) come out as one token per run of characters,
not per word; there is no compound splitting, no synonym handling and no accent folding.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from offline_agent.errors import ConfigError, RetrievalError

# Letters and digits of any script; the underscore is excluded so that `snake_case` splits like other words.
TOKEN_PATTERN = r"[^\W_]+"
_TOKEN_RE = re.compile(TOKEN_PATTERN)

# The NLTK English list (179 words), which is also what most BM25 baselines drop.
ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against ain all am an and any are aren aren't as at be because been before
    being below between both but by can couldn couldn't d did didn didn't do does doesn doesn't doing don
    don't down during each few for from further had hadn hadn't has hasn hasn't have haven haven't having he
    her here hers herself him himself his how i if in into is isn isn't it it's its itself just ll m ma me
    mightn mightn't more most mustn mustn't my myself needn needn't no nor not now o of off on once only or
    other our ours ourselves out over own re s same shan shan't she she's should should've shouldn shouldn't
    so some such t than that that'll the their theirs them themselves then there these they this those
    through to too under until up ve very was wasn wasn't we were weren weren't what when where which while
    who whom why will with won won't wouldn wouldn't y you you'd you'll you're you've your yours yourself
    yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)
STOPWORD_LISTS = {"en": ENGLISH_STOPWORDS}
NORMALIZATIONS = ("NFC", "NFKC", "NFD", "NFKD")


@dataclass(frozen=True)
class Analyzer:
    """Text to terms: normalize, lowercase, split, drop stopwords and odd lengths, optionally stem.

    `stopwords` is a language code from STOPWORD_LISTS ("en"), an explicit collection of words, or None.
    `stemmer` is a Snowball language name understood by PyStemmer ("english", "french", ...) or None.
    """

    lowercase: bool = True
    stopwords: str | frozenset[str] | None = "en"
    stemmer: str | None = None
    normalize: str | None = "NFKC"
    min_len: int = 1
    max_len: int = 64
    _stopset: frozenset[str] = field(init=False, repr=False, compare=False)
    _stem: Callable[[str], str] | None = field(init=False, repr=False, compare=False)
    _cache: dict[str, str | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        stop = self.stopwords
        if isinstance(stop, str):
            if stop not in STOPWORD_LISTS:
                raise ConfigError(f"unknown stopword list {stop!r}; choose from {sorted(STOPWORD_LISTS)}")
            stopset = STOPWORD_LISTS[stop]
        elif stop is None:
            stopset = frozenset()
        else:
            stopset = frozenset(stop)
            object.__setattr__(self, "stopwords", stopset)
        if self.normalize is not None and self.normalize not in NORMALIZATIONS:
            raise ConfigError(f"unknown normalization {self.normalize!r}; choose from {list(NORMALIZATIONS)}")
        if not 1 <= self.min_len <= self.max_len:
            raise ConfigError(f"need 1 <= min_len <= max_len, got {self.min_len} and {self.max_len}")
        object.__setattr__(self, "_stopset", stopset)
        object.__setattr__(self, "_stem", _load_stemmer(self.stemmer) if self.stemmer else None)
        object.__setattr__(self, "_cache", {})

    def prepare(self, text: str) -> str:
        """Normalize and lowercase `text` (the steps that apply to the whole string)."""
        if self.normalize is not None and not text.isascii():
            text = unicodedata.normalize(self.normalize, text)
        return text.lower() if self.lowercase else text

    def raw_tokens(self, text: str) -> list[str]:
        """The tokens of `text` before stopwords and stemming."""
        return _TOKEN_RE.findall(self.prepare(text))

    def term(self, token: str) -> str | None:
        """The index term for one raw token, or None when the token is dropped."""
        try:
            return self._cache[token]
        except KeyError:
            pass
        term = self.term_uncached(token)
        if len(self._cache) < 100_000:  # queries repeat words; a build keeps its own table
            self._cache[token] = term
        return term

    def term_uncached(self, token: str) -> str | None:
        """`term` without the cache (for builds, which remember every token themselves)."""
        if not self.min_len <= len(token) <= self.max_len or token in self._stopset:
            return None
        return self._stem(token) if self._stem is not None else token

    def tokens(self, text: str) -> list[str]:
        """The index terms of `text`, in order, repeats kept."""
        terms = map(self.term, self.raw_tokens(text))
        return [t for t in terms if t is not None]

    def __call__(self, text: str) -> list[str]:
        return self.tokens(text)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, term) of every kept token, with offsets into `text` itself (for highlighting)."""
        out = []
        for match in _TOKEN_RE.finditer(text):
            for token in self.raw_tokens(match.group()):
                term = self.term(token)
                if term is not None:
                    out.append((match.start(), match.end(), term))
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description that `from_dict` turns back into an equal analyzer."""
        stop = self.stopwords
        return {
            "lowercase": self.lowercase,
            "stopwords": sorted(stop) if isinstance(stop, frozenset) else stop,
            "stemmer": self.stemmer,
            "normalize": self.normalize,
            "min_len": self.min_len,
            "max_len": self.max_len,
            "token_pattern": TOKEN_PATTERN,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Analyzer:
        """Rebuild an analyzer saved with `to_dict`."""
        if data.get("token_pattern", TOKEN_PATTERN) != TOKEN_PATTERN:
            raise RetrievalError(f"the index uses an unknown token pattern {data['token_pattern']!r}")
        stop = data.get("stopwords")
        return cls(
            lowercase=bool(data.get("lowercase", True)),
            stopwords=frozenset(stop) if isinstance(stop, list) else stop,
            stemmer=data.get("stemmer"),
            normalize=data.get("normalize"),
            min_len=int(data.get("min_len", 1)),
            max_len=int(data.get("max_len", 64)),
        )

    def terms_many(self, texts: Iterable[str]) -> list[list[str]]:
        """`tokens` of each text."""
        return [self.tokens(t) for t in texts]


def _load_stemmer(language: str) -> Callable[[str], str]:
    try:
        import Stemmer  # PyStemmer
    except ImportError:
        raise RetrievalError(
            f"stemming ({language}) needs PyStemmer: pip install PyStemmer (or pass stemmer=None)"
        ) from None
    try:
        return Stemmer.Stemmer(language).stemWord
    except KeyError:
        choices = sorted(Stemmer.algorithms())
        raise ConfigError(f"unknown stemmer {language!r}; choose from {choices}") from None
