"""`offline-agent serve` as a subprocess for the tests that talk to it over HTTP (imported as `serve_support`)."""

from __future__ import annotations

import importlib
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import ROOT, TINY_CORPUS, cli_env

ADDRESS = re.compile(r"the page and the API at (http://\S+)")
HOSTILE = "# Trap\n\nThe trap holds <script>window.__pwned = 1</script> and <img src=x onerror=window.__pwned=2>.\n"


def http_client():
    """The httpx module (httpx2, the name Starlette and openai now use, or httpx), or the test is skipped."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    pytest.skip("no HTTP client: httpx2 comes with the openai client and the mcp extra (pip install -e '.[test]')")


class ServerProcess:
    """A running `offline-agent serve`: its URL, and its stderr as it comes (read by a thread, so it never fills)."""

    def __init__(self, args: list[str], home: Path, *, timeout: float = 300) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "offline_agent.cli", "serve", "--port", "0", *args],
            cwd=ROOT,
            env=cli_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._found = threading.Event()
        self.url = ""
        threading.Thread(target=self._read, daemon=True).start()
        if not self._found.wait(timeout) or not self.url:
            self.process.kill()
            raise AssertionError("the server did not start:\n" + "".join(self.lines))

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            found = ADDRESS.search(line)
            if found:
                self.url = found.group(1)
                self._found.set()
        self._found.set()  # ended without an address

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        """Send `sig` and wait for the exit status (killed past `timeout`)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("the server did not stop:\n" + self.stderr) from None
        finally:
            time.sleep(0.1)  # let the reader thread take the last lines


def make_home(base: Path) -> tuple[Path, Path]:
    """OFFLINE_AGENT_HOME with the named index `notes` over the tiny corpus, and a folder of one hostile document."""
    from offline_agent.retrieval import build_from_paths
    from offline_agent.retrieval.catalog import index_path

    corpus, hostile, home = base / "corpus", base / "hostile", base / "home"
    for folder in (corpus, hostile):
        folder.mkdir(parents=True)
    for name, text in TINY_CORPUS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    (hostile / "trap.md").write_text(HOSTILE, encoding="utf-8")
    import os

    before = os.environ.get("OFFLINE_AGENT_HOME")
    os.environ["OFFLINE_AGENT_HOME"] = str(home)
    try:
        build_from_paths([corpus]).index.save(index_path("notes"))
    finally:
        if before is None:
            del os.environ["OFFLINE_AGENT_HOME"]
        else:
            os.environ["OFFLINE_AGENT_HOME"] = before
    return home, hostile
