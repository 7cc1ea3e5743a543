"""bench/learning.py's recipe rows are valid configs on the quickstart shape and turn on what
their names say (DAPO's pieces, GSPO's loss); the equal-time checkpoint is the last that fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import bench_module


@pytest.fixture(scope="module")
def learning():
    return bench_module("learning")


@pytest.fixture(scope="module")
def configs(learning):
    """Each row as `videorl train quickstart ROW...` loads it."""
    from videorl.api import resolve_config_path
    from videorl.config import load_config

    quickstart = resolve_config_path("quickstart")
    return {
        name: load_config(quickstart, learning.recipe_overrides(name, 10))
        for name in learning.RECIPES
    }


def test_every_row_loads_on_the_quickstart_shape(configs):
    assert {"grpo", "dapo", "gspo"} <= set(configs)
    for config in configs.values():
        assert config.rollout.max_new_tokens == 16 and config.data.prompts_per_step == 4


def test_dapo_row_has_dapos_pieces(configs):
    dapo = configs["dapo"]
    loss, sampling = dapo.algorithm.loss, dapo.algorithm.dynamic_sampling
    assert (loss.clip_low, loss.clip_high, loss.aggregation, loss.kl_coef) == (
        0.2,
        0.28,
        "token-mean",
        0.0,
    )
    assert dapo.reward.overlong.enabled and dapo.reward.overlong.buffer_len <= 16
    assert sampling.enabled and sampling.metric == "task" and sampling.batches_per_draw == 3
    assert not dapo.algorithm.annotation_rows


def test_gspo_row_uses_the_sequence_level_loss(configs):
    assert configs["gspo"].algorithm.loss.name == "gspo"
    assert not configs["gspo"].algorithm.dynamic_sampling.enabled


def test_equal_time_picks_the_last_checkpoint_within_the_budget(learning):
    # cumulative seconds 1, 3, 4, 7, 8, 9; saved at steps 2 (3 s), 4 (7 s) and 6 (9 s)
    run = {"step_cpu": [1.0, 2.0, 1.0, 3.0, 1.0, 1.0], "save_every": 2, "out": "runs/x"}
    assert learning.checkpoint_within(run, 9.0) == (6, str(Path("runs/x/final")))
    assert learning.checkpoint_within(run, 7.9) == (4, str(Path("runs/x/step-000004/model")))
    assert learning.checkpoint_within(run, 4.0) == (2, str(Path("runs/x/step-000002/model")))
    assert learning.checkpoint_within(run, 0.5)[0] == 2  # none fits: the first checkpoint


@pytest.mark.parametrize("name", ["learning", "distill"])
def test_pages_hold_the_tables_the_results_make(learning, name):
    """README.md and docs/performance.md show what bench/results/NAME.json says."""
    import json

    saved = json.loads((learning.RESULTS / f"{name}.json").read_text())
    pages = learning.PAGES if name == "learning" else {learning.ROOT / "docs/performance.md": False}
    for page, short in pages.items():
        committed = bench_module("harness").marked_text(page, f"bench/{name}.py")
        assert committed == learning.table_text(saved, short), (
            f"{page.name} is stale: PYTHONPATH=src python bench/{name}.py --write"
        )


def test_seeds_table_has_a_line_per_seed_and_their_mean():
    seeds = bench_module("seeds")
    scores = {"mIoU": 10.0, "gain_frozen": 4.0, "gain_reversed": 2.0, "gain_shuffled": 3.0}
    rows = [
        {"seed": 0, "sft": scores, "orarl": {k: v + 2 for k, v in scores.items()}},
        {"seed": 1, "sft": scores, "orarl": {k: v + 4 for k, v in scores.items()}},
    ]
    lines = seeds.markdown(rows).splitlines()
    assert lines[0] == "| seed | mIoU | gain vs frozen | gain vs reversed | gain vs shuffled |"
    assert lines[2].startswith("| 0 | 10.0 -> 12.0 | 4.0 -> 6.0 |")
    assert lines[-1] == "| mean | 10.0 -> 13.0 | 4.0 -> 7.0 | 2.0 -> 5.0 | 3.0 -> 6.0 |"


def test_readme_holds_the_seeds_table_the_results_make():
    seeds = bench_module("seeds")
    committed = bench_module("harness").marked_text(seeds.ROOT / "README.md", "bench/seeds.py")
    assert committed == seeds.readme_table(), (
        "README.md is stale: PYTHONPATH=src python bench/seeds.py --write"
    )
