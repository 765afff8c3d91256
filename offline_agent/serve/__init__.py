"""`offline-agent serve`: the agent over HTTP, as an OpenAI-compatible API and a web page, on one loaded model.

- `openai_api`: what a chat-completions request may hold, and the completion, chunks and errors written back;
- `runs`: the bounded queue and the one worker thread that runs the agent, with cancelling;
- `app`: the Starlette routes, the web page (page/, package data) and the guard in front of them;
- `server`: the sessions over the served indexes, the socket, uvicorn, and a clean end on Ctrl-C or SIGTERM.

Starlette and uvicorn come with the `serve` extra (and with `mcp`); docs/serve.md is the user's guide.
"""

from __future__ import annotations

from offline_agent.serve.app import Served, build_app
from offline_agent.serve.runs import Job, QueueFullError, RunCancelled, RunQueue
from offline_agent.serve.server import open_served
from offline_agent.serve.server import serve as serve_app

__all__ = ["Job", "QueueFullError", "RunCancelled", "RunQueue", "Served", "build_app", "open_served", "serve_app"]
