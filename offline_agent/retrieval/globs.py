"""`index --include GLOB` and `--exclude GLOB`: which of the files a folder walk finds are read.

A pattern is matched against a path relative to the folder given on the command line, written with "/":
- `*` matches any characters but "/", `?` one character but "/", `[abc]` and `[!abc]` one of a set, and `**`
  any number of folders, none included: `**/*.md` matches `a.md` and `notes/2024/a.md`;
- a pattern with no "/" matches a file or folder name at any depth (`*.md`, `node_modules`); a pattern with a
  "/" is anchored at the folder given (`drafts/*`, `docs/**/*.rst`, `/readme.md`); a trailing "/" is ignored;
- a pattern that matches a folder matches everything under it: `--exclude drafts` and `--exclude 'drafts/*'`
  leave out everything inside `drafts/`, and the walk does not even enter an excluded folder.
A file is read when it matches some --include (or none is given) and no --exclude. Matching is case-sensitive.
Files and folders named on the command line are always read: the patterns filter what the walk finds in them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from offline_agent.errors import ConfigError


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of one --include/--exclude pattern, matched against a whole relative path."""
    anchored = "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    if not body:
        raise ConfigError(f"empty glob pattern {pattern!r}")
    out, i = [], 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : end]
            negate = inner.startswith("!")
            inner = re.sub(r"([\\\]^])", r"\\\1", inner[1:] if negate else inner)
            out.append(f"[{'^/' if negate else ''}{inner}]")
            i = end + 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + "".join(out))


@dataclass(frozen=True)
class PathFilter:
    """The --include and --exclude patterns of one build, compiled."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    _include: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _exclude: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_include", tuple(glob_regex(p) for p in self.include))
        object.__setattr__(self, "_exclude", tuple(glob_regex(p) for p in self.exclude))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def excluded_folder(self, relative: str) -> str | None:
        """The --exclude pattern that leaves out the folder at `relative` (and all it holds), or None."""
        return next((p for p, rx in zip(self.exclude, self._exclude, strict=True) if rx.fullmatch(relative)), None)

    def left_out(self, relative: str) -> str | None:
        """Why the file at `relative` is not read ("excluded by --exclude P", "not matched by --include"), or
        None when it is read."""
        paths = _self_and_folders(relative)
        for pattern, rx in zip(self.exclude, self._exclude, strict=True):
            if any(rx.fullmatch(p) for p in paths):
                return f"excluded by --exclude {pattern}"
        if self._include and not any(rx.fullmatch(p) for rx in self._include for p in paths):
            return "not matched by --include"
        return None


def _self_and_folders(relative: str) -> list[str]:
    """ "a/b/c.md" -> ["a/b/c.md", "a/b", "a"]."""
    parts = relative.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
