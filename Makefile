# Two commands: `make quickstart` (set up, train a tiny model on synthetic video, evaluate, report)
# and `make test` (set up, run the test suite). Everything runs on a CPU.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
QS := runs/quickstart

.PHONY: setup test quickstart bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check -e '.[dev,demo]'
	touch $@

setup: $(VENV)/.installed

test: setup
	$(PY) -m pytest

quickstart: setup
	$(PY) -m videorl make-tiny $(QS)/model --arch qwen2_5_vl
	$(PY) -m videorl synth --out $(QS)/data --families temporal_grounding --n 96 --seed 0 --val 16
	$(PY) -m videorl train quickstart
	$(PY) -m videorl eval --model $(QS)/train/final --benchmark $(QS)/data/val.jsonl --out $(QS)/eval --max-frames 8 --max-pixels 12544
	@echo "checkpoint: $(QS)/train/final  metrics: $(QS)/train/metrics.jsonl  curves: $(QS)/train/reward_curves.png  report: $(QS)/eval/report.md"

clean:
	rm -rf runs .pytest_cache
