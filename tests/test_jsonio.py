"""jsonio: every way json fails becomes one JSONReadError, and one bad member of a list or object is isolated;
outputs: a path that cannot be written is named for what it is before a run starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offline_agent import jsonio
from offline_agent.errors import ConfigError
from offline_agent.outputs import check_writable_file, check_writable_folder, describe_write_error

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    [
        (DEEP, "depth", "JSON nested too deeply to read"),
        ('{"a": ' * 50_000 + "1" + "}" * 50_000, "depth", "JSON nested too deeply to read"),
        ("7" * 5000, "number", "a JSON number longer than 4300 digits"),
        ('{"id": -' + "7" * 5000 + "}", "number", "a JSON number longer than 4300 digits"),
        ("[1,", "syntax", "invalid JSON (line 1, column 4: Expecting value)"),
        ("", "syntax", "invalid JSON (line 1, column 1: Expecting value)"),
        (b"\xff[]", "syntax", "invalid JSON"),
    ],
)
def test_loads_turns_every_failure_into_one_error(text: str, kind: str, message: str) -> None:
    with pytest.raises(jsonio.JSONReadError) as err:
        jsonio.loads(text)
    assert err.value.kind == kind and str(err.value).startswith(message) and "\n" not in str(err.value)


def test_members_of_an_array_are_read_one_by_one() -> None:
    text = '[{"id": 1}, ' + DEEP + ", " + "9" * 5000 + ', {"x": "a,]}"}]'
    kind, members = jsonio.loads_members(text)
    assert kind == "array" and [key for key, _ in members] == [0, 1, 2, 3]
    assert members[0][1] == {"id": 1} and members[3][1] == {"x": "a,]}"}
    assert [m[1].kind for m in members[1:3]] == ["depth", "number"]


def test_members_of_an_object_are_read_one_by_one() -> None:
    kind, members = jsonio.loads_members('{"a": {"t": 1}, "b": ' + DEEP + ', "c": []}')
    assert kind == "object" and [key for key, _ in members] == ["a", "b", "c"]
    assert isinstance(members[1][1], jsonio.JSONReadError) and members[2][1] == []


@pytest.mark.parametrize("text", ["[1 2]", "[1,]", '{"a" 1}', "[1] x", "[", "3", "{1: 2}"])
def test_members_of_invalid_json_is_a_syntax_error(text: str) -> None:
    with pytest.raises(jsonio.JSONReadError) as err:
        jsonio.loads_members(text)
    assert err.value.kind == "syntax"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(st.lists(json_values, max_size=6) | st.dictionaries(st.text(), json_values, max_size=6))
def test_members_agree_with_json_loads(value) -> None:
    text = json.dumps(value, indent=1)
    kind, members = jsonio.loads_members(text)
    if kind == "array":
        assert [v for _, v in members] == value
    else:
        assert dict(members) == value


def test_writable_checks_name_the_obstacle(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"cannot write the trace file .*: .*file\.txt is a file, not a folder"):
        check_writable_file(tmp_path / "file.txt" / "sub" / "trace.jsonl", "trace file")
    with pytest.raises(ConfigError, match="it is a folder"):
        check_writable_file(tmp_path, "trace file")
    with pytest.raises(ConfigError, match=r"cannot use the run folder .*file\.txt is a file, not a folder"):
        check_writable_folder(tmp_path / "file.txt", "run folder")
    check_writable_file(tmp_path / "new" / "deeper" / "trace.jsonl", "trace file")  # parents can be made
    check_writable_folder(tmp_path / "new" / "run", "run folder")
    assert not (tmp_path / "new").exists()  # checking creates nothing
    error = FileExistsError(17, "File exists")
    assert describe_write_error(tmp_path / "file.txt" / "t.jsonl", error).endswith("file.txt is a file, not a folder")
