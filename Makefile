# integrity-gym: `make bench` runs the heuristic baselines, `make test` runs every check.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.installed-dev
EPISODES ?= 5
SEED     ?= 0

.PHONY: bench test lint typecheck unit fmt clean

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
