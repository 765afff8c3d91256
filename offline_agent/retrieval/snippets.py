"""Short extracts of a passage around the query's terms, with the matching words located for marking.

The analyzer decides what matches (so "Running" matches the query "runs" when the index stems), and the window
is placed where the most distinct query terms fall close together. Limits: one window per passage.
"""

from __future__ import annotations

from offline_agent.retrieval.analyzer import Analyzer


def highlight_spans(text: str, query: str, analyzer: Analyzer) -> list[tuple[int, int]]:
    """Character spans of the words of `text` whose term is one of the query's terms."""
    wanted = set(analyzer.tokens(query))
    if not wanted:
        return []
    return [(s, e) for s, e, term in analyzer.spans(text) if term in wanted]


def snippet(text: str, query: str, analyzer: Analyzer, width: int = 240, mark: tuple[str, str] = ("**", "**")) -> str:
    """About `width` characters of `text` around the best cluster of query terms, wrapped in `mark`."""
    spans = highlight_spans(text, query, analyzer)
    start, end = _window(text, spans, width)
    out, pos = [], start
    for s, e in spans:
        if s < start or e > end:
            continue
        out.append(text[pos:s])
        out.append(f"{mark[0]}{text[s:e]}{mark[1]}")
        pos = e
    out.append(text[pos:end])
    body = " ".join("".join(out).split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


def _window(text: str, spans: list[tuple[int, int]], width: int) -> tuple[int, int]:
    if len(text) <= width:
        return 0, len(text)
    if not spans:
        return 0, _cut_right(text, width)
    # The window start (at a matching word) that covers the most matching words.
    best, best_count, j = spans[0][0], 0, 0
    for i, (s, _) in enumerate(spans):
        j = max(j, i)
        while j + 1 < len(spans) and spans[j + 1][1] - s <= width:
            j += 1
        if j - i + 1 > best_count:
            best, best_count = s, j - i + 1
    start = max(0, best - width // 4)
    start = text.rfind(" ", 0, start) + 1 if start > 0 else 0
    end = min(len(text), start + width)
    if end < len(text):
        end = _cut_right(text, end, start)
    return start, max(end, min(len(text), start + 1))


def _cut_right(text: str, end: int, start: int = 0) -> int:
    space = text.rfind(" ", start, end)
    return space if space > start + (end - start) // 2 else end
