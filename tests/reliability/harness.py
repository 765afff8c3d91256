"""Helpers of the reliability suite: the CLI in a subprocess, one-line errors, namespace probes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, cli_env


def cli(
    *args: str,
    home: Path | None = None,
    cwd: Path | None = None,
    prefix: tuple[str, ...] = (),
    stdin: str | None = None,
    timeout: float = 1800,  # a guard against a hang, not a time limit: a loaded 2-core machine is slow
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, in a subprocess (optionally behind `prefix`, e.g. unshare -n)."""
    env = cli_env(home)
    env.setdefault("OFFLINE_AGENT_THREADS", "1")  # one thread: no spinning wait for a busy second core
    return subprocess.run(
        [*prefix, sys.executable, "-m", "offline_agent.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or ROOT,
        input=stdin,
        timeout=timeout,
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 1) -> str | None:
    """The single `error:` line of a failed CLI run, or None when the run did not fail that way."""
    if result.returncode != code or "Traceback" in result.stderr:
        return None
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    return lines[0] if len(lines) == 1 else None


def namespace_probe(*flags: str, command: tuple[str, ...] = ("true",)) -> str | None:
    """None when `unshare FLAGS COMMAND` works here, else the reason it does not (for a skip)."""
    try:
        probe = subprocess.run(["unshare", *flags, *command], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return "unshare (util-linux) is not installed"
    if probe.returncode != 0:
        return f"`unshare {' '.join(flags)}` is not permitted here: {probe.stderr.strip() or probe.returncode}"
    return None


def cli_bounded(*args: str, timeout: float, **kwargs) -> subprocess.CompletedProcess[str] | None:
    """`cli` with a bound on its time: None when the run did not end within `timeout` seconds (a hang)."""
    try:
        return cli(*args, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        return None


def outcome_of(result: subprocess.CompletedProcess[str] | None, ok: bool) -> str:
    """The ledger's outcome of a CLI run judged `ok` or not: handled, hang (no result), traceback or failed."""
    if ok and result is not None:
        return "handled"
    if result is None:
        return "hang"
    return "traceback" if "Traceback" in result.stderr else "failed"


def on_small_disk(
    tmp_path: Path, size: str, code: str, *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run Python `code` (argv: the disk, then `args`) in a private mount namespace (`unshare -rm`: root in a user
    namespace, no privileges needed on the host) where tmp_path/disk is a tmpfs of `size` ("64k"); where namespaces
    are not permitted, the test skips with the reason."""
    disk = tmp_path / "disk"
    disk.mkdir()
    reason = namespace_probe("-rm", command=("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)))
    if reason:
        pytest.skip(f"no tmpfs for a full disk: {reason}")
    script = f'mount -t tmpfs -o size={size} tmpfs "$1" && shift && exec "$@"'
    command = ["unshare", "-rm", "sh", "-c", script, "sh", str(disk), sys.executable, "-c", code, str(disk), *args]
    return subprocess.run(command, capture_output=True, text=True, env=cli_env(), cwd=ROOT, timeout=timeout)
