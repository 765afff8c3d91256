"""Sentence spans and passage chunking, by character offsets into the original text.

The chunker cuts long documents into passages at sentence boundaries so that every passage can point back to
the exact characters it came from; the agent's lookup tool uses the same sentence spans.

Rules (deliberately simple, no model): a sentence ends at `.`, `!`, `?`, `…` or their CJK forms (with any
closing quotes or brackets right after) when whitespace follows and the next word does not start in lowercase;
a blank line, or a line break before a list item or heading, always ends one. A period after a known
abbreviation ("Dr.", "e.g.") or a single capital letter ("J. Smith") does not end one, nor does the period of a
number that starts a line ("20.3. Connections and Authentication", "1. Install it"): a numbered heading or list
item is one sentence, not a number and then the rest. Limits: no language-specific rules beyond this; sentences
inside quotes that end in `.` followed by a lowercase word stay joined with what follows.

Time is linear in the length of the text: each candidate end looks back only over the word before it, and a run of
end marks (a row of dots) is tried once, from its first mark. `_text.c` does the same work in one pass
(a fifth to a seventh of the time); where it is built, `split_sentences` and `chunk_spans` use it, with the same results
(tests compare both), and the Python below is what runs without it.
"""

from __future__ import annotations

import re

from offline_agent.retrieval.kernel import compiled

_COMPILED = compiled("_text", 1)

_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig figs no nos vol pp ca approx dept est inc ltd co
    corp jan feb mar apr jun jul aug sep sept oct nov dec mt ft gen gov lt col sgt capt rev u.s u.k""".split()  # noqa: SIM905
)
# The look-behind starts a match only at the first mark of a run: from inside a run the match could only fail the
# same way as from its start, and trying each mark of a long row of dots cost time in the square of its length.
_END_RE = re.compile(r"""(?:(?<![.!?…])[.!?…]+|[。！？]+)["'”’»)\]]*(?=\s|$)|[。！？]+(?=\S)""")
_MARK_RE = re.compile(r"[.!?…。！？]")  # where an _END_RE match can start
_CUT_INSIDE_WORD_RE = re.compile(r"[。！？]\S")  # the only sentence end that can fall inside a run of non-spaces
_BREAK_RE = re.compile(r"\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*+•]\s|\d+[.)]\s|#{1,6}\s))")
_WORD_BEFORE_RE = re.compile(r"(\S+)$")
_NEXT_RE = re.compile(r"\s*(\S)")
_WS_RE = re.compile(r"\S+")
# The number of a section or list item: "20", "20.3", "49.2.2", "f.3" (an appendix's), before its final period.
_NUMBER_LABEL_RE = re.compile(r"(?:\d+|[a-z])(?:\.\d+)*")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans (start, end) of the sentences in `text`, in order, without surrounding whitespace.

    Every non-whitespace character of `text` falls in exactly one span.
    """
    if _COMPILED is not None:
        return _COMPILED.split_sentences(text, _ABBREVIATIONS)
    return _split_sentences(text)


def _split_sentences(text: str) -> list[tuple[int, int]]:
    """`split_sentences` in Python."""
    cuts = {m.end() for m in _BREAK_RE.finditer(text)}
    # What _END_RE.finditer(text) finds, found faster: a match can only start at an end mark, so the pattern is
    # tried at each mark (not after the last match) instead of at every character.
    after = 0
    for mark in _MARK_RE.finditer(text):
        at = mark.start()
        if at < after:
            continue
        m = _END_RE.match(text, at)
        if m is not None:
            after = m.end()
            if _is_sentence_end(text, at, after):
                cuts.add(after)
    return spans_between(text, cuts)


def spans_between(text: str, cuts: set[int]) -> list[tuple[int, int]]:
    """The stripped, non-empty spans of `text` between the cut offsets `cuts` (and its ends)."""
    spans = []
    start = 0
    for cut in sorted(cuts) + [len(text)]:
        span = _strip(text, start, cut)
        if span is not None:
            spans.append(span)
        start = cut
    return spans


def first_sentence(text: str) -> str:
    """The first sentence of `text` (in an encyclopedic document, what it is about), or the whole text, stripped,
    when it has none."""
    spans = split_sentences(text)
    return text[spans[0][0] : spans[0][1]].strip() if spans else text.strip()


def _is_sentence_end(text: str, start: int, end: int) -> bool:
    if text[start] in "。！？":
        return True
    nxt = _NEXT_RE.match(text, end)
    if nxt is None:
        return True
    if nxt.group(1).islower():
        return False
    if text[start] == ".":
        word = _word_before(text, start)
        if word is not None:
            w = word.group(1).lstrip("(\"'“‘").lower()
            if w in _ABBREVIATIONS or (len(w) == 1 and w.isalpha()):
                return False
            if _NUMBER_LABEL_RE.fullmatch(w) and _starts_line(text, word.start(1)):
                return False  # "20.3. Connections" or "1. Install": a heading's or a list item's number
    return True


def _starts_line(text: str, at: int) -> bool:
    """Whether only spaces or tabs stand between the previous line break (or the text's start) and `at` (looking
    back over those spaces only, so that the time stays linear)."""
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    return at == 0 or text[at - 1] == "\n"


def _word_before(text: str, end: int) -> re.Match[str] | None:
    """What `_WORD_BEFORE_RE.search(text, 0, end)` finds (the run of non-space characters that ends at `end`, or
    before a line break there), looking back only as far as that run goes: searching from the start of the text
    made splitting take time in the square of its length."""
    step, lo = 32, end
    while True:
        lo = max(0, lo - step)
        word = _WORD_BEFORE_RE.search(text, lo, end)
        if word is None or word.start() > lo or lo == 0:
            return word
        step *= 2  # the run may go on before `lo`: look further back


def _strip(text: str, start: int, end: int) -> tuple[int, int] | None:
    part = text[start:end]
    left = part.lstrip()
    if not left:
        return None
    return start + len(part) - len(left), start + len(part.rstrip())


def chunk_spans(text: str, size: int = 200, overlap: int = 40, max_chars: int | None = None) -> list[tuple[int, int]]:
    """Passages of at most `size` words (whitespace-separated) covering `text`, as character spans.

    Passages start and end on sentence boundaries; consecutive passages share up to `overlap` words of
    whole sentences. A sentence longer than `size` words is cut between words, and a run without whitespace
    longer than `max_chars` (default 12 characters per word of `size`) is cut anywhere, so a huge single-line
    file still yields bounded passages.
    """
    if size < 1 or overlap < 0 or overlap >= size or (max_chars is not None and max_chars < 0):
        raise ValueError(f"need size >= 1, 0 <= overlap < size, max_chars >= 0, got {size}, {overlap}, {max_chars}")
    max_chars = max_chars or size * 12
    if _COMPILED is not None:
        # A bound past the text's length is no bound: cut to it, the compiled chunker (C integers) takes any size
        # (`--chunk-size` near 2**63 overflowed) and gives what Python gives.
        cap = len(text) + 1
        if size > cap:
            size, overlap = cap + 1, min(overlap, cap)
        return _COMPILED.chunk_spans(text, size, overlap, min(max_chars, cap), _ABBREVIATIONS)
    return _chunk_spans(text, size, overlap, max_chars)


def _chunk_spans(text: str, size: int, overlap: int, max_chars: int) -> list[tuple[int, int]]:
    """`chunk_spans` in Python."""
    if not _CUT_INSIDE_WORD_RE.search(text):
        # A text that fits in one passage is that passage, its ends stripped: what the sentences would give, found
        # without them (a sentence can end inside a run of non-spaces only after a CJK mark, which this excludes).
        whole = _strip(text, 0, len(text))
        if whole is None:
            return []
        if whole[1] - whole[0] <= max_chars and len(text.split()) <= size:
            return [whole]
    return _chunk_units(text, size, overlap, max_chars)


def _chunk_units(text: str, size: int, overlap: int, max_chars: int) -> list[tuple[int, int]]:
    """`chunk_spans` by way of the text's sentences and their bounded pieces."""
    units = [u for s, e in _split_sentences(text) for u in _bounded_units(text, s, e, size, max_chars)]
    chunks: list[tuple[int, int]] = []
    i = 0
    while i < len(units):
        words = 0
        j = i
        while j < len(units) and (j == i or (words + units[j][2] <= size and units[j][1] - units[i][0] <= max_chars)):
            words += units[j][2]
            j += 1
        chunks.append((units[i][0], units[j - 1][1]))
        if j >= len(units):
            break
        # Step back over whole trailing units while they fit in the overlap, but always make progress: the next
        # passage must still have room for unit j, the first one this passage left out (else it would end where
        # this one ends, a passage inside this one).
        back, k = 0, j
        while k - 1 > i and back + units[k - 1][2] <= overlap:
            room = back + units[k - 1][2] + units[j][2] <= size and units[j][1] - units[k - 1][0] <= max_chars
            if not room:
                break
            back += units[k - 1][2]
            k -= 1
        i = k
    return chunks


def _bounded_units(text: str, start: int, end: int, size: int, max_chars: int) -> list[tuple[int, int, int]]:
    """(start, end, words) pieces of one sentence, each at most `size` words and `max_chars` characters."""
    if end - start <= max_chars:  # the usual sentence: count its words without locating them
        count = len(text[start:end].split())  # str.split and the regex's \s agree on what is a space
        if count <= size:
            return [(start, end, count)]
    words = [(m.start(), m.end()) for m in _WS_RE.finditer(text, start, end)]
    if len(words) <= size and end - start <= max_chars:
        return [(start, end, len(words))]
    pieces: list[tuple[int, int, int]] = []
    piece_start: int | None = None
    count, prev_end = 0, start
    for ws, we in words:
        while we - ws > max_chars:  # one enormous "word": cut it into fixed-size runs
            if piece_start is not None:
                pieces.append((piece_start, prev_end, count))
                piece_start, count = None, 0
            pieces.append((ws, ws + max_chars, 1))
            ws += max_chars
        if piece_start is not None and (count + 1 > size or we - piece_start > max_chars):
            pieces.append((piece_start, prev_end, count))
            piece_start, count = None, 0
        if piece_start is None:
            piece_start = ws
        count += 1
        prev_end = we
    if piece_start is not None:
        pieces.append((piece_start, prev_end, count))
    return pieces
