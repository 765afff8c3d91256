# The two set-up commands of the README. Both are safe to run again.
#   make run    install offline-agent and the default model, then answer a question from the sample corpus
#   make test   install the test tools and the small test model, then run the whole test suite
QUESTION ?= Which river flows through the birth city of James Joyce?

.PHONY: run test lint

run:
	scripts/install.sh --model qwen2.5-coder-1.5b-instruct
	.venv/bin/offline-agent ask "$(QUESTION)"

test:
	scripts/install.sh --test --model smollm2-135m-instruct
	scripts/test.sh

lint:  # ruff comes with `make test`'s set-up (the test extra)
	.venv/bin/python -m ruff check offline_agent tests benchmarks
	.venv/bin/python -m ruff format --check offline_agent tests benchmarks
