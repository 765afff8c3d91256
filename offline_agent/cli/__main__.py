"""`python -m offline_agent.cli`: the same command as the `offline-agent` script."""

from offline_agent.cli import main

main()
