# The README's two commands live here: `make demo` (main job) and `make test` (test suite).
# Both create the virtual environment on first use; nothing needs a network but the package registry.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: venv demo demo-table test docs lint bench clean

# torch is installed first, on its own. From the public PyPI on Linux, `torch==2.13.0` is the CUDA build
# (several GB of nvidia-* packages); the PyTorch CPU wheel index has the CPU build (about 200 MB). So the CPU
# index is used when it answers within 5 s; otherwise pip's own configured index is used, and the line
# printed says which build that gives. TORCH_INDEX= (empty) skips the probe: pip's configuration decides
# (a mirror or wheel folder that holds the build you want); TORCH_INDEX=https://download.pytorch.org/whl/cu126
# picks a CUDA build.
TORCH ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PROBE := import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_INDEX)" ] && $(PY) -c '$(TORCH_PROBE)' "$(TORCH_INDEX)" 2>/dev/null; then \
		echo "make venv: $(TORCH) from $(TORCH_INDEX)"; \
		$(PY) -m pip install --quiet --index-url "$(TORCH_INDEX)" "$(TORCH)"; \
	else \
		[ -z "$(TORCH_INDEX)" ] || echo "make venv: $(TORCH_INDEX) did not answer; installing $(TORCH) from pip's configured index. From the public PyPI on Linux that is the CUDA build (several GB); for the CPU build, run make venv again where that index is reachable, or point pip at a CPU wheel (see the Makefile)."; \
		$(PY) -m pip install --quiet "$(TORCH)"; \
	fi
	@$(PY) -c 'import torch; print("make venv: torch", torch.__version__, "(CUDA build: " + str(torch.version.cuda) + ")" if torch.version.cuda else "(CPU build)")'
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

# Main job: NCBI-disease (shipped inside the package), three seeded trials of the shipped pre-trained
# bioelectra-small (finetune's default --ckpt, DEFAULT_CKPT in bioelectra/checkpoints.py; its default rate
# 3e-4, 3 epochs), dev/test F1 table: about 9 minutes on 2 CPU cores. DEMO_CKPT=bioelectra-small-untrained
# runs the same command on its untrained twin, DEMO_CKPT=bioelectra-mini on the smaller shipped model;
# DEMO_ARGS adds finetune options.
DEMO_ARGS ?=
DEMO_CKPT ?= bioelectra-small
demo: venv
	$(VENV)/bin/bioelectra finetune --loader ner --dataset ncbi-disease --trials 3 $(DEMO_ARGS) --ckpt $(DEMO_CKPT) --output-dir runs/demo-$(DEMO_CKPT)

# The results page's demo table, from the demo run's results.md (tools/readme_demo_table.py: checks its format,
# copies it to docs/demo/results.md, the record the figures come from, and regenerates the pages).
demo-table:
	$(PY) tools/readme_demo_table.py runs/demo-$(DEMO_CKPT)/results.md --write

# -n auto: one pytest-xdist worker per core, at most 4 (each holds torch and a model or two in memory)
test: venv
	$(PY) -m pytest -q -n auto --maxprocesses 4

# The documentation site (MkDocs, Material theme) into site/; --strict: a broken link or a stale generated page
# (tools/docs_pages.py --check) fails.
docs: venv
	$(PY) tools/docs_pages.py --check
	$(VENV)/bin/mkdocs build --strict --site-dir site

lint: venv
	$(VENV)/bin/ruff check .

bench: venv
	$(PY) bench/finetune_throughput.py
	$(PY) bench/build_data_throughput.py --corpus ohsumed
	$(PY) bench/pretrain_throughput.py --cases small:128 --batch-size 8 --steps 3 --warmup 1
	$(PY) bench/adamw_update.py --sizes small --repeats 5

clean:
	rm -rf runs site .pytest_cache .ruff_cache
