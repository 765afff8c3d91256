"""Boilerplate found from the corpus: a title affix that a site's pages all repeat is left out of their titles (and
kept in the index's record), generated files (search indexes, minified scripts and styles, source maps) are
skipped with a reason unless an --include names them, and `--update` titles pages as a fresh build would."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli_env

from offline_agent.retrieval import IngestOptions, build_from_paths, ingest_paths, update_from_paths
from offline_agent.retrieval.boilerplate import MIN_PAGES, TitleBoilerplate, detect_titles, find_affixes
from offline_agent.retrieval.generated import generated_by_content, generated_by_name
from offline_agent.retrieval.ingest import walk

SITE = " — Demo 2.1 documentation"
PAGES = {
    "index.html": ("Demo 2.1 documentation", "Welcome", "The demo manual starts here."),
    "intro.html": ("Introduction" + SITE, "Introduction", "An introduction to the gizmo."),
    "library/re.html": ("re — Regular expressions" + SITE, "re — Regular expressions", "Patterns match strings."),
    "library/os.html": ("os — Operating system interfaces" + SITE, "os — Operating system", "Files and processes."),
    "library/json.html": ("json — JSON encoder" + SITE, "json — JSON", "Objects become text."),
    "library/csv.html": ("csv — CSV files" + SITE, "csv — CSV", "Rows of comma separated values."),
    "faq.html": ("Questions &amp; answers" + SITE, "FAQ", "Why the gizmo hums."),
}


def page(title: str, heading: str, text: str) -> str:
    return (
        f'<html><head><meta charset="utf-8"><title>{title}</title></head>'
        f'<body><div role="main"><h1>{heading}</h1><p>{text}</p></div></body></html>'
    )


def write_site(root: Path, pages: dict[str, tuple[str, str, str]] = PAGES) -> Path:
    for name, parts in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(page(*parts), encoding="utf-8")
    return root


def titles_of(index) -> dict[str, str]:
    return {p.doc_id: p.title for p in (index.passage(int(i)) for i in index.ids())}


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", *args], capture_output=True, text=True, env=cli_env(home),
        timeout=300,
    )  # fmt: skip


def test_a_suffix_every_page_repeats_is_found_and_left_out(tmp_path: Path) -> None:
    index = build_from_paths([write_site(tmp_path)]).index
    assert index.extra["boilerplate"] == {
        "title_suffixes": [{"text": SITE, "pages": 6}],
        "title_prefixes": [],
        "blocks": [],  # the pages share no paragraph (boilerplate_blocks.py)
    }
    assert titles_of(index) == {
        "index.html": "Demo 2.1 documentation",  # the site's own name, with no separator: left whole
        "intro.html": "Introduction",
        "library/re.html": "re — Regular expressions",
        "library/os.html": "os — Operating system interfaces",
        "library/json.html": "json — JSON encoder",
        "library/csv.html": "csv — CSV files",
        "faq.html": "Questions & answers",
    }


@pytest.mark.parametrize("pages", [1, 2, MIN_PAGES - 1])
def test_a_corpus_of_few_pages_is_untouched(tmp_path: Path, pages: int) -> None:
    some = dict(list(PAGES.items())[2 : pages + 2])  # pages whose first heading is no part of their title
    index = build_from_paths([write_site(tmp_path, some)]).index
    assert index.extra["boilerplate"] == {"title_suffixes": [], "title_prefixes": [], "blocks": []}
    assert sorted(titles_of(index).values()) == sorted(title.replace("&amp;", "&") for title, _, _ in some.values())


def test_an_affix_a_minority_of_a_folder_shares_is_kept() -> None:
    # "Index — " on 6 of 20 pages of one folder (a site's index pages), and a suffix on 5 of 11 pages: chance.
    titles = {f"genindex-{c}.html": f"Index — {c}" for c in "ABCDEF"}
    titles |= {f"page{i}.html": f"Page {i} about things" for i in range(14)}
    titles |= {f"notes/n{i}.html": f"Note {i} - draft" if i < 5 else f"Note {i}" for i in range(11)}
    assert not find_affixes(titles)


def test_the_folder_that_holds_the_pages_decides(tmp_path: Path) -> None:
    # A site in a folder of its own among many other pages: most pages of that folder carry its name.
    titles = {f"other/o{i}.html": f"Other page {i}" for i in range(40)}
    titles |= {f"site/s{i}.html": f"S{i} | Gizmo Docs" for i in range(6)}
    titles |= {f"site/deep/d{i}.html": f"D{i} | Gizmo Docs" for i in range(3)} | {"site/x.html": "X"}
    found = find_affixes(titles)
    assert found.suffixes == ((" | Gizmo Docs", 9),) and found.prefixes == ()


def test_detection_does_not_depend_on_order() -> None:
    titles = {f"p{i}.html": f"Site · Page {i} · Manual" for i in range(9)} | {"q.html": "Site · Q", "r.html": "R"}
    items = list(titles.items())
    random.Random(4).shuffle(items)
    found = find_affixes(dict(items))
    assert found == find_affixes(titles)
    assert found.prefixes == (("Site · ", 10),) and found.suffixes == ((" · Manual", 9),)
    assert [found.strip_title(t) for t in ("Site · Page 3 · Manual", "Site · Q", "R")] == ["Page 3", "Q", "R"]


def test_a_title_is_never_stripped_to_nothing() -> None:
    found = TitleBoilerplate(suffixes=((" — Site", 9), (" — Manual — Site", 6)), prefixes=(("Docs: ", 7),))
    assert found.strip_title("Intro — Manual — Site") == "Intro"  # the longest suffix first
    assert found.strip_title("Docs: Intro — Site") == "Intro"
    assert found.strip_title("… — Site") == "… — Site"  # nothing with a letter or digit would be left
    assert TitleBoilerplate.from_dict(found.to_dict()) == found


def test_long_titles_of_many_separators_give_short_affixes_only() -> None:
    titles = {f"p{i}.html": f"P{i} - " + " - ".join(["x"] * 5000) + " | Site" for i in range(6)}
    found = find_affixes(titles)
    assert found.prefixes == () and all(len(text) <= 120 for text, _ in found.suffixes)
    assert found.strip_title(titles["p0.html"]).endswith(" - x")


def test_records_and_text_files_keep_their_titles(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "title": f"Entry {i} - Wiki", "text": f"Text {i}."} for i in range(8)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for i in range(8):
        (tmp_path / f"note{i}.md").write_text(f"# Note {i} - Wiki\n\nBody {i}.\n", encoding="utf-8")
    index = build_from_paths([tmp_path]).index
    assert not TitleBoilerplate.from_dict(index.extra["boilerplate"])
    assert {t for t in titles_of(index).values()} == {f"{k} {i} - Wiki" for k in ("Entry", "Note") for i in range(8)}


def test_update_titles_pages_as_a_fresh_build_would(tmp_path: Path) -> None:
    root = tmp_path / "site"
    some = dict(list(PAGES.items())[2:6])  # 4 pages carry the suffix: too few
    write_site(root, some)
    index = build_from_paths([root]).index
    assert titles_of(index)["library/re.html"] == "re — Regular expressions" + SITE
    write_site(root)  # 6 pages now: the suffix is the site's
    report = update_from_paths(index, [root])
    assert titles_of(index) == titles_of(build_from_paths([root]).index)
    assert titles_of(index)["library/re.html"] == "re — Regular expressions"
    assert str(root / "library/re.html") in report.changed_files  # its bytes did not change, its title did

    for i in range(8):  # most pages no longer carry it: back to whole titles
        (root / f"extra{i}.html").write_text(page(f"Extra {i}", f"Extra {i}", "More."), encoding="utf-8")
    update_from_paths(index, [root])
    assert titles_of(index) == titles_of(build_from_paths([root]).index)
    assert titles_of(index)["library/re.html"] == "re — Regular expressions" + SITE
    assert not TitleBoilerplate.from_dict(index.extra["boilerplate"])

    (root / "extra0.html").write_text(page("Extra 0 changed", "Extra 0", "Less."), encoding="utf-8")
    report = update_from_paths(index, [root])  # the same boilerplate (none): only the changed page is read
    assert report.changed_files == [str(root / "extra0.html")]


def test_an_update_opens_only_the_pages_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from offline_agent.retrieval import boilerplate

    root = write_site(tmp_path / "site")
    index = build_from_paths([root]).index
    assert index.extra["files"][str(root / "intro.html")]["page_title"] == "Introduction" + SITE
    opened: list[str] = []
    real = boilerplate.head_title
    monkeypatch.setattr(boilerplate, "head_title", lambda path: opened.append(path.name) or real(path))
    (root / "faq.html").write_text(page("FAQ" + SITE, "FAQ", "Why the gizmo hums loudly."), encoding="utf-8")
    report = update_from_paths(index, [root])
    assert opened == ["faq.html"] and report.changed_files == [str(root / "faq.html")]
    assert titles_of(index)["faq.html"] == "FAQ"
    assert index.extra["files"][str(root / "faq.html")]["page_title"] == "FAQ" + SITE


LONG_LINE = "var a=" + ",".join(f"f{i}=function(x){{return x+{i}}}" for i in range(200)) + ";"


def write_generated(root: Path) -> None:
    write_site(root)
    (root / "searchindex.js").write_text('Search.setIndex({"terms":{"gizmo":[1,2]}})', encoding="utf-8")
    (root / "search").mkdir()
    (root / "search" / "search_index.json").write_text('{"docs": [{"text": "gizmo"}]}', encoding="utf-8")
    static = root / "_static"
    static.mkdir()
    (static / "jquery.min.js").write_text("/*! lib */" + LONG_LINE, encoding="utf-8")
    (static / "app.js").write_text(LONG_LINE, encoding="utf-8")  # minified without saying so in its name
    (static / "app.js.map").write_text('{"version":3,"mappings":"AAAA"}', encoding="utf-8")
    (static / "theme.css").write_text("body{margin:0}" * 200, encoding="utf-8")
    menu = "".join(f"function open{i}(menu) {{\n  menu.show({i});\n}}\n" for i in range(100))
    (static / "menu.js").write_text(menu, encoding="utf-8")  # hand-written: read


def test_generated_files_are_told_apart() -> None:
    assert "search index" in generated_by_name("searchindex.js")
    assert "search index" in generated_by_name("member-search-index.js")
    assert "search index" in generated_by_name("search_index.json")
    assert "minified" in generated_by_name("jquery.min.js") and "source map" in generated_by_name("app.js.map")
    assert generated_by_name("search.html") is None and generated_by_name("index.json") is None
    assert "one line" in generated_by_content("app.js", LONG_LINE.encode())
    assert generated_by_content("app.py", LONG_LINE.encode()) is None  # only scripts and styles
    assert generated_by_content("tiny.css", b"a{b:c}") is None  # too small to tell
    assert generated_by_content("menu.js", b"function f() {\n  return 1;\n}\n" * 100) is None


def test_generated_files_are_skipped_with_a_reason_and_an_include_brings_them_back(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_generated(root)
    home = tmp_path / "home"
    done = cli("index", str(root), "--name", "demo", "--json", home=home)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    skipped = {Path(s["path"]).relative_to(root).as_posix(): s["reason"] for s in summary["skipped"]}
    assert sorted(skipped) == [
        "_static/app.js",
        "_static/app.js.map",
        "_static/jquery.min.js",
        "_static/theme.css",
        "search/search_index.json",
        "searchindex.js",
    ]
    assert skipped["searchindex.js"].startswith("generated file (search index")
    assert skipped["_static/app.js"].startswith("generated file (minified JavaScript: one line of")
    assert skipped["_static/theme.css"].startswith("generated file (minified CSS")
    assert str(root / "_static/menu.js") in summary["added_files"]
    assert summary["boilerplate"]["title_suffixes"] == [{"text": SITE, "pages": 6}]

    text = cli("index", str(root), "--name", "demo", home=home)
    assert "6 files skipped: generated file (6)" in text.stdout
    assert f"title suffix left out as boilerplate: {SITE!r} (6 pages)" in text.stdout
    info = cli("index", "info", "demo", home=home)
    assert f"title suffix left out as boilerplate: {SITE!r} (6 pages)" in info.stdout
    found = json.loads(cli("search", "gizmo", "--index", "demo", "--json", home=home).stdout)
    assert found["hits"] and not any(h["source"].endswith(".js") or SITE in h["title"] for h in found["hits"])

    again = cli("index", str(root), "--name", "demo", "--json", "--include", "searchindex.js", "--include", "*.js",
                "--include", "*.html", home=home)  # fmt: skip
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    added = {Path(p).relative_to(root).as_posix() for p in summary["added_files"]}
    assert {"searchindex.js", "_static/app.js", "_static/jquery.min.js"} <= added
    skipped = {Path(s["path"]).name: s["reason"] for s in summary["skipped"]}
    assert set(skipped) == {"app.js.map", "search_index.json", "theme.css"}
    assert set(skipped.values()) == {"not matched by --include"}
    found = json.loads(cli("search", "gizmo", "--index", "demo", "--json", home=home).stdout)
    assert str(root / "searchindex.js") in {h["source"] for h in found["hits"]}


def test_a_folder_include_does_not_bring_generated_files_back(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_generated(root)
    entries, skipped = walk([root], IngestOptions(include=("_static",)).path_filter)
    assert [e.doc_id for e in entries] == ["_static/app.js", "_static/menu.js", "_static/theme.css"]
    by_name = sorted(Path(p).name for p, why in skipped if why.startswith("generated"))
    assert by_name == ["app.js.map", "jquery.min.js"]
    out = ingest_paths([root], IngestOptions(include=("_static",)))
    by_content = [Path(s).name for s, why in out.skipped if why.startswith("generated file (minified")]
    assert by_content == ["jquery.min.js", "app.js", "theme.css"] and list(map(Path, out.files)) == [
        root / "_static/menu.js"
    ]


def test_a_generated_file_named_on_the_command_line_is_read(tmp_path: Path) -> None:
    write_generated(tmp_path)
    out = ingest_paths([tmp_path / "searchindex.js", tmp_path / "_static" / "app.js"])
    assert sorted(Path(p).name for p in out.files) == ["app.js", "searchindex.js"] and out.skipped == []


MANUALS = {
    "python": Path("/usr/share/doc/python3-doc/html"),
    "postgresql": Path("/usr/share/doc/postgresql-doc-15/html"),
}


@pytest.mark.parametrize("manual", sorted(MANUALS))
def test_the_boilerplate_of_the_two_manuals(manual: str) -> None:
    root = MANUALS[manual]
    if not root.is_dir():
        pytest.skip(f"{root} is not installed (scripts/install.sh installs python3-doc and postgresql-doc-15)")
    entries, skipped = walk([root])
    titles, _ = detect_titles(entries)
    generated = sorted(Path(p).relative_to(root).as_posix() for p, why in skipped if why.startswith("generated"))
    if manual == "python":  # Sphinx: the site's name and version on every page, its search index beside them
        (suffix,), prefixes = titles.affixes()
        assert re.fullmatch(r" — Python 3\.\d+\.\d+ documentation", suffix) and prefixes == ()
        assert generated == ["searchindex.js"]
    else:  # DocBook titles carry no site name; no generated file
        assert not titles and generated == []
