"""The MCP server answers every request that has an id, and one bad index never hides the others.

The SDK reads a request whose id is not a string or an integer (1.5, 2.0, true, an object, a list, null) as a
notification, which gets no reply: the client waited for ever. Each now gets a JSON-RPC error (-32600) with its id
where the id is a number, null otherwise. An index whose files.json has another shape than the code reads (its
checksum made to match, as anyone who can write the folder can) made `list_indexes` fail with an AttributeError
for every index, and `search` said only "Error executing tool search": now that index is listed with its error, the
others are listed and searched as before, and a tool that fails says why in one line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harness import cli
from test_hostile_text import _mcp_exchange

ODD_IDS = {"1.5": 1.5, "2.0": 2.0, "true": None, '{"a": 1}': None, "[1]": None, "null": None}


def test_a_request_with_any_id_gets_a_reply(tmp_path: Path, tiny_corpus: Path, ledger) -> None:
    lines = [b'{"jsonrpc": "2.0", "id": %s, "method": "tools/list"}' % given.encode() for given in ODD_IDS]
    replies, err = _mcp_exchange(lines, tmp_path / "home", tiny_corpus, answers=len(lines))
    errors = [reply for reply in replies if reply.get("error", {}).get("code") == -32600]
    answered = sorted(json.dumps(reply["id"]) for reply in errors)
    expected = sorted(json.dumps(echo) for echo in ODD_IDS.values())
    for _ in ODD_IDS:
        ok = answered == expected and "Traceback" not in err
        ledger.record("mcp", "handled" if ok else "traceback" if "Traceback" in err else "hang")
    assert answered == expected, (replies, err[-1000:])


def _call(number: int, tool: str, **arguments: object) -> bytes:
    params = {"name": tool, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}).encode()


def _result(replies: list[dict], number: int) -> dict:
    return next((reply.get("result") or {} for reply in replies if reply.get("id") == number), {})


def test_one_bad_index_never_hides_the_others(tmp_path: Path, tiny_corpus: Path, ledger) -> None:
    home = tmp_path / "home"
    for name in ("good", "bad"):
        built = cli("index", str(tiny_corpus), "--name", name, home=home)
        assert built.returncode == 0, built.stderr[-1000:]
    folder = home / "indexes" / "bad"
    files = next(folder.glob("g*")) / "files.json"
    files.write_text(json.dumps({**json.loads(files.read_text()), "files": []}))  # a list where an object is read
    manifest = json.loads((folder / "manifest.json").read_text())
    raw = files.read_bytes()
    manifest["files"]["files.json"] = {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    (folder / "manifest.json").write_text(json.dumps(manifest))

    lines = [
        _call(1, "list_indexes"),
        _call(2, "search", query="Vistula", index="good"),
        _call(3, "search", query="Vistula", index="bad"),
    ]
    replies, err = _mcp_exchange(lines, home, None, answers=len(lines))
    listed = json.loads((_result(replies, 1).get("content") or [{}])[0].get("text", "{}")).get("indexes", [])
    by_name = {entry.get("name"): entry for entry in listed}
    good = _result(replies, 2)
    bad = _result(replies, 3)
    bad_text = (bad.get("content") or [{}])[0].get("text", "")
    checks = {
        "list": by_name.get("good", {}).get("passages", 0) > 0
        and "files.json" in by_name.get("bad", {}).get("error", ""),
        "search good": not good.get("isError") and "Vistula" in json.dumps(good),
        "search bad": bool(bad.get("isError")) and "corrupt index file" in bad_text and "\n" not in bad_text,
    }
    for ok in checks.values():
        ledger.record("mcp", "handled" if ok else "traceback" if "Traceback" in err else "failed")
    assert all(checks.values()), (checks, replies, err[-1000:])
