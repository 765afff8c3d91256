"""`offline-agent serve`: the agent over HTTP, as an OpenAI-style API and a web page, with the model loaded once."""

from __future__ import annotations

import os

import click
from click.core import ParameterSource

from offline_agent.cli.legacy import OptionsCommand
from offline_agent.cli.options import RunChoice, run_options
from offline_agent.cli.sections import CORPUS, OUTPUT, SERVER, place

API_KEY_ENV = "OFFLINE_AGENT_API_KEY"


@click.command("serve", cls=OptionsCommand)
@place(
    {
        "corpora": CORPUS,
        **dict.fromkeys(("host", "port", "api_key", "cors", "queue_size"), SERVER),
        "show_sources": OUTPUT,
    }
)
@click.option(
    "--corpus",
    "-c",
    "corpora",
    multiple=True,
    metavar="DIR_OR_INDEX",
    help="An index to serve (repeat for more): an index name, an index folder, or a folder or file of documents. "
    "Each is one model of the API, named after it; the first is the default. Default: the sample corpus.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: any free one).",
)
@click.option(
    "--api-key",
    metavar="KEY",
    default=None,
    help=f"Require this key on every request (Bearer token, or the password of HTTP Basic in a browser); needed "
    f"with a --host other than loopback [env {API_KEY_ENV}].",
)
@click.option(
    "--cors",
    "cors",
    multiple=True,
    metavar="ORIGIN",
    help="Let web pages from ORIGIN (e.g. http://localhost:3000) call the API (repeatable). Default: none.",
)
@click.option(
    "--queue",
    "queue_size",
    type=click.IntRange(1, 10000),
    default=32,
    show_default=True,
    help="Most questions waiting for the model; past that a request gets 503 with Retry-After.",
)
@click.option(
    "--show-sources",
    is_flag=True,
    help="Write the sources under every answer in the reply's content (a request's show_sources overrides it).",
)
@run_options(
    max_steps_help="Most model turns per question; the last one may only answer (see --early-stopping).",
    max_seconds_help="Bound each request to this many seconds, its wait in the queue included (stop reason timeout).",
    corpus=False,
)
def serve(
    corpora: tuple[str, ...],
    host: str,
    port: int,
    api_key: str | None,
    cors: tuple[str, ...],
    queue_size: int,
    show_sources: bool,
    run: RunChoice,
) -> None:
    """Serve your indexes over HTTP: an OpenAI-compatible API and a web page, on one loaded model.

    GET /v1/models lists one model per index; POST /v1/chat/completions answers the last user message with the
    agent, earlier turns as the chat's history, and returns the answer with its sources (the `offline_agent`
    field); `"stream": true` sends the steps as they are written, then the answer. The page at / asks, shows the
    steps and opens the passages the sources cite. Questions wait in one queue for the model. Ctrl-C or SIGTERM
    finishes the step being written and exits. docs/serve.md has the details.

    \b
    Examples:
      offline-agent serve --corpus notes
      curl -s http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
        -d '{"messages": [{"role": "user", "content": "Who founded X?"}]}'
    """
    from offline_agent.cli.ask import model_line
    from offline_agent.serve.server import (
        bind,
        is_loopback,
        open_served,
        require_server,
        run_question,
        url_of,
    )

    require_server()
    key = api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None
    if key is not None and not key.strip():
        raise click.BadParameter("is empty", param_hint="--api-key")
    loopback = is_loopback(host)
    if not loopback and key is None:
        raise click.UsageError(
            f"--host {host} is reachable from other machines: give --api-key (or set {API_KEY_ENV}) so that only "
            "clients holding the key are answered"
        )
    ctx = click.get_current_context()
    given = ctx.get_parameter_source("scope") not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    scope = run.settings.config.scope if given else None  # None: each index's own scope
    sock = bind(host, port)  # before the model loads: a port in use fails at once
    try:
        served = open_served(corpora, run.backend.build, run.settings, scope, show_sources=show_sources)
        from offline_agent.serve import RunQueue, build_app, serve_app

        click.echo(f"model: {model_line(next(iter(served.sessions.values())).backend)}", err=True)
        runs = RunQueue(run_question(served), limit=queue_size)
        app = build_app(served, runs, api_key=key, loopback=loopback, cors=cors)
        names = ", ".join(f"{name} ({len(s.index)} passages)" for name, s in served.sessions.items())
        click.echo(f"offline-agent serve: {names}; the page and the API at {url_of(sock)}", err=True)
    except BaseException:
        sock.close()
        raise
    serve_app(app, runs, sock)


COMMANDS = [serve]

__all__ = ["COMMANDS", "serve"]
