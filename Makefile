# The README's two commands live here: `make demo` (main job) and `make test` (test suite).
# Both create the virtual environment on first use; nothing needs a network but the package registry.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: venv demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the CPU build of torch first: a bare `torch` requirement would pull several GB of CUDA packages
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

# Main job: NCBI-disease (shipped inside the package), three seeded trials of the shipped pre-trained
# bioelectra-small (finetune's default --ckpt, DEFAULT_CKPT in bioelectra/checkpoints.py; its default rate
# 3e-4, 3 epochs), dev/test F1 table: about 6.5 minutes on 2 CPU cores. DEMO_CKPT=bioelectra-small-untrained
# runs the same command on its untrained twin, DEMO_CKPT=bioelectra-mini on the smaller shipped model;
# DEMO_ARGS adds finetune options.
DEMO_ARGS ?=
DEMO_CKPT ?= bioelectra-small
demo: venv
	$(VENV)/bin/bioelectra finetune --loader ner --dataset ncbi-disease --trials 3 $(DEMO_ARGS) --ckpt $(DEMO_CKPT) --output-dir runs/demo-$(DEMO_CKPT)

test: venv
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check .

bench: venv
	$(PY) bench/finetune_throughput.py
	$(PY) bench/build_data_throughput.py --corpus ohsumed
	$(PY) bench/pretrain_throughput.py --cases small:128 --batch-size 8 --steps 3 --warmup 1

clean:
	rm -rf runs .pytest_cache .ruff_cache
