"""`index --include GLOB` and `--exclude GLOB`: which of the files a folder walk finds are read.

A pattern is matched against a path relative to the folder given on the command line, written with "/":
- `*` matches any characters but "/", `?` one character but "/", `[abc]`, `[a-z]` and `[!abc]` one of a set (a
  negated set never matches "/"), and `**` any number of folders, none included: `**/*.md` matches `a.md` and
  `notes/2024/a.md` (a `**` not followed by "/" matches any characters, "/" included);
- a pattern with no "/" matches a file or folder name at any depth (`*.md`, `node_modules`); a pattern with a
  "/" is anchored at the folder given (`drafts/*`, `docs/**/*.rst`, `/readme.md`); a trailing "/" is ignored;
- a pattern that matches a folder matches everything under it: `--exclude drafts` and `--exclude 'drafts/*'`
  leave out everything inside `drafts/`, and the walk does not even enter an excluded folder.
A file is read when it matches some --include (or none is given) and no --exclude. Matching is case-sensitive.
Files and folders named on the command line are always read: the patterns filter what the walk finds in them.

A pattern is matched in time linear in the path's length, whatever it holds: `re` on a translation backtracks, and
`*a*a*a*a*b` against a long name of a's took minutes. `GlobMatcher` runs the pattern as a set of positions that
advance together, one character at a time (each set of positions met is remembered with where each character
takes it, so a walk pays for each once). A set with its range backwards (`[z-a]`) is a one-line error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from offline_agent.errors import ConfigError

# What each position of a pattern matches: one character (CHAR), one character but "/" (ONE), one of a set (SET),
# and three that may match nothing: any characters but "/" (STAR), any characters (ANY), and any characters that
# end with "/" (DIRS: `**/`, and the any-depth start of a pattern without "/").
CHAR, ONE, SET, STAR, ANY, DIRS = range(6)
_OPTIONAL = (STAR, ANY, DIRS)
_MOVES_KEPT = 4096  # remembered (positions, character) moves of one pattern; past that they are forgotten


@dataclass(frozen=True)
class _Token:
    kind: int
    char: str = ""
    ranges: tuple[tuple[str, str], ...] = ()  # SET: inclusive character ranges
    negated: bool = False

    def takes(self, char: str) -> bool:
        """Whether this position matches `char` (for CHAR, ONE and SET)."""
        if self.kind == CHAR:
            return char == self.char
        if self.kind == ONE:
            return char != "/"
        inside = any(low <= char <= high for low, high in self.ranges)
        return (char != "/" and not inside) if self.negated else inside


class GlobMatcher:
    """One --include/--exclude pattern, matched against a whole relative path (`fullmatch`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        anchored = "/" in pattern.rstrip("/")
        body = pattern.strip("/")
        if not body:
            raise ConfigError(f"empty glob pattern {pattern!r}")
        tokens = ([] if anchored else [_Token(DIRS)]) + _tokens(body, pattern)
        self._tokens = tuple(tokens)
        self._start = self._closure((0,))
        self._moves: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def _closure(self, positions: Iterable[int]) -> frozenset[int]:
        """`positions` and every position reached from them by skipping optional positions (they match nothing)."""
        out = set(positions)
        todo = list(out)
        while todo:
            at = todo.pop()
            if 0 <= at < len(self._tokens) and self._tokens[at].kind in _OPTIONAL and at + 1 not in out:
                out.add(at + 1)
                todo.append(at + 1)
        return frozenset(out)

    def _step(self, positions: frozenset[int], char: str) -> frozenset[int]:
        """The positions after `char` from `positions`."""
        move = self._moves.get((positions, char))
        if move is not None:
            return move
        after: set[int] = set()
        for at in positions:
            if at < 0:  # inside the DIRS at -at - 1
                after.add(at)
                if char == "/":
                    after.add(-at)
                continue
            if at == len(self._tokens):
                continue
            token = self._tokens[at]
            if token.kind == STAR:
                if char != "/":
                    after.add(at)
            elif token.kind == ANY:
                after.add(at)
            elif token.kind == DIRS:
                after.add(-at - 1)  # inside it: it must end with a "/" before the next position may start
                if char == "/":
                    after.add(at + 1)
            elif token.takes(char):
                after.add(at + 1)
        move = self._closure(after)
        if len(self._moves) >= _MOVES_KEPT:
            self._moves.clear()
        self._moves[(positions, char)] = move
        return move

    def fullmatch(self, path: str) -> bool:
        """Whether the pattern matches all of `path`."""
        positions = self._start
        for char in path:
            positions = self._step(positions, char)
            if not positions:
                return False
        return len(self._tokens) in positions


def _tokens(body: str, pattern: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append(_Token(DIRS))
            i += 3
        elif body.startswith("**", i):
            out.append(_Token(ANY))
            i += 2
        elif body[i] == "*":
            out.append(_Token(STAR))
            i += 1
        elif body[i] == "?":
            out.append(_Token(ONE))
            i += 1
        elif body[i] == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : end]
            negated = inner.startswith("!")
            out.append(_Token(SET, ranges=_ranges(inner[1:] if negated else inner, pattern), negated=negated))
            i = end + 1
        else:
            out.append(_Token(CHAR, char=body[i]))
            i += 1
    return out


def _ranges(inner: str, pattern: str) -> tuple[tuple[str, str], ...]:
    """The ranges of a set's inside: `a-z` a range, a "-" first or last itself."""
    out, i = [], 0
    while i < len(inner):
        if i + 2 < len(inner) and inner[i + 1] == "-":
            low, high = inner[i], inner[i + 2]
            if low > high:
                raise ConfigError(f"glob pattern {pattern!r}: the range {low}-{high} is backwards (write {high}-{low})")
            out.append((low, high))
            i += 3
        else:
            out.append((inner[i], inner[i]))
            i += 1
    return tuple(out)


@dataclass(frozen=True)
class PathFilter:
    """The --include and --exclude patterns of one build, compiled."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    _include: tuple[GlobMatcher, ...] = field(init=False, repr=False, compare=False)
    _exclude: tuple[GlobMatcher, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_include", tuple(GlobMatcher(p) for p in self.include))
        object.__setattr__(self, "_exclude", tuple(GlobMatcher(p) for p in self.exclude))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def excluded_folder(self, relative: str) -> str | None:
        """The --exclude pattern that leaves out the folder at `relative` (and all it holds), or None."""
        return next((m.pattern for m in self._exclude if m.fullmatch(relative)), None)

    def left_out(self, relative: str) -> str | None:
        """Why the file at `relative` is not read ("excluded by --exclude P", "not matched by --include"), or
        None when it is read."""
        paths = _self_and_folders(relative)
        for matcher in self._exclude:
            if any(matcher.fullmatch(p) for p in paths):
                return f"excluded by --exclude {matcher.pattern}"
        if self._include and not any(m.fullmatch(p) for m in self._include for p in paths):
            return "not matched by --include"
        return None


def _self_and_folders(relative: str) -> list[str]:
    """ "a/b/c.md" -> ["a/b/c.md", "a/b", "a"]."""
    parts = relative.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
