"""`python bench/long_video.py --encodes`: vision encodes per row in a 3-turn tool rollout
before and after the visual-embedding cache encoded each new clip once (issue 46).

A scripted policy (`videorl.rollout.scripted.ScriptedEngine`) on the tiny model plays three
turns on synthetic temporal-grounding videos (2 prompts, 4 samples each): even samples call
`get_clip` in turns 1 and 2 and answer in turn 3, odd samples answer at once. Each arm is
a real `train_step` (GRPO, a reward that pays the calls), `--repeats` times, the arms
alternating after one untimed step:

- `after`: the cache stores each part of a context merged by a tool turn
  (`visual_cache.note_merges`), so each prompt video (once per group) and each clip is
  encoded once, in generation and in every later forward;
- `before`: `note_merges` disabled, so a merged context is one new tensor and each turn's
  generation re-encodes its whole context's media, as before the cache knew the parts.

Per arm: `tools/vision_encodes_per_row` (items the rollout's generation encoded / rows), the
items the vision tower ran over the whole step (a forward hook on the tower: generation
and every later forward) and the step's wall and CPU seconds (one torch thread: CPU time is
the work done, which other jobs on shared cores do not stretch).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any
from unittest import mock

import harness

PROMPTS, SAMPLES = 2, 4
CLIPS = [
    '<tool_call>{"name": "get_clip", "arguments": {"start": 0, "end": 2, "fps": 4}}</tool_call>',
    '<tool_call>{"name": "get_clip", "arguments": {"start": 1, "end": 3, "fps": 4}}</tool_call>',
]
ANSWER = "<answer>1 to 3</answer>"
CLOCKS = ("step_s", "step_cpu_s")
# turn 1: sample k plays its entry k % 2; later turns: the rows still running (the callers)
SCRIPT = [[CLIPS[0], ANSWER], [CLIPS[1]], [ANSWER]]
OVERRIDES = [
    f"data.prompts_per_step={PROMPTS}",
    f"rollout.n={SAMPLES}",
    "rollout.tools=[get_clip]",
    "rollout.max_turns=3",
    "rollout.max_total_tokens=2000",
    "algorithm.estimator=grpo",
    "algorithm.annotation_rows=false",
    "algorithm.pruning.enabled=false",
    "reward.plugins={temporal_grounding: 'long_video_encodes:calls_reward'}",
    "trainer.seed=0",
]


def calls_reward(record: Any, response: str, config: Any, calls: Any) -> dict[str, float]:
    """1 per call that ran over the script's 2 (rows differ, so the update has advantages)."""
    score = sum(call.ok for call in calls) / len(CLIPS)
    return {"format": 1.0, "task": score, "overall": score}


@contextlib.contextmanager
def tower_items(state: Any):
    """Yields a list that collects the items (videos, images) of every vision-tower run."""
    from videorl.models.split_vision import vision_tower

    items: list[int] = []

    def count(_module: Any, args: Any, kwargs: Any, _output: Any) -> None:
        grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
        items.append(int(grid.shape[0]))

    models = (state.policy, state.logprob_model)
    towers = {id(t): t for m in models if (t := vision_tower(m.model)) is not None}
    hooks = [t.register_forward_hook(count, with_kwargs=True) for t in towers.values()]
    try:
        yield items
    finally:
        for hook in hooks:
            hook.remove()


def one_step(config: Any, parts: bool) -> dict[str, Any]:
    """One train step with the scripted engine; `parts=False` disables `note_merges`."""
    from videorl.rollout.scripted import ScriptedEngine
    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    state = build_state(config, None)
    state.engine = ScriptedEngine(state.engine.loaded, SCRIPT, encode_media=True)
    no_parts = mock.patch("videorl.rollout.multiturn.note_merges", lambda *args: None)
    try:
        with (
            tower_items(state) as items,
            contextlib.nullcontext() if parts else no_parts,
            harness.Elapsed() as clock,
        ):
            metrics = train_step(state, state.sampler.next_batch())
    finally:
        if state.tools is not None:
            state.tools.close()
    return {
        "vision_encodes_per_row": metrics["tools/vision_encodes_per_row"],
        "calls_per_row": metrics["tools/calls_per_row"],
        "tower_items_step": sum(items),
        "step_s": round(clock.wall, 3),
        "step_cpu_s": round(clock.cpu, 3),
    }


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """An arm's repeats: its counts (the same in every repeat) and its times' spreads."""
    counts = {k: v for k, v in runs[0].items() if k not in CLOCKS}
    if any({k: v for k, v in r.items() if k not in CLOCKS} != counts for r in runs):
        raise RuntimeError(f"the encode counts differ between repeats: {runs}")
    return {**counts, **{k: harness.spread([r[k] for r in runs], 3) for k in CLOCKS}}


def measure_encodes(work: Path, quick: bool, repeats: int) -> dict[str, Any]:
    """Both arms on the same model, data and seed, alternating, after one untimed step (a
    process's first step also pays its lazy set-up and decodes the videos into the cache);
    before / after ratios of the counts and of the median times."""
    model = harness.model_dir(work, "tiny")
    train = harness.synth_data(work, "temporal_grounding", n=PROMPTS)
    settings = [*OVERRIDES, f"video.max_frames={4 if quick else 16}"]
    machine = harness.machine()

    def step(arm: str, parts: bool) -> dict[str, Any]:
        output = f"trainer.output_dir={work / f'long_video_encodes_{arm}'}"
        return one_step(harness.recipe(model, train, work, *settings, output), parts)

    step("warmup", True)
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(repeats):
        for arm, arm_runs in runs.items():
            arm_runs.append(step(arm, parts=arm == "after"))
    before, after = combined(runs["before"]), combined(runs["after"])
    ratios = {
        k: round(before[k] / after[k], 3) for k in ("vision_encodes_per_row", "tower_items_step")
    }
    ratios.update({k: round(before[k]["median"] / after[k]["median"], 3) for k in CLOCKS})
    return {
        "settings": settings,
        "model": "tiny",
        "script": "even samples: get_clip, get_clip, answer; odd samples: answer",
        "rows": PROMPTS * SAMPLES,
        "repeats": repeats,
        "before": before,
        "after": after,
        "before_over_after": ratios,
        "machine": machine,
    }


def page_lines(encodes: dict[str, Any]) -> list[str]:
    """The table and ratio line that `--encodes` prints and docs/long_videos.md shows."""
    rows = [
        [
            f"3-turn tool rollout, {arm}",
            f"{r['vision_encodes_per_row']:.2f}",
            r["tower_items_step"],
            harness.fmt(r["step_s"], " s"),
            harness.fmt(r["step_cpu_s"], " s"),
        ]
        for arm, r in ((arm, encodes[arm]) for arm in ("before", "after"))
    ]
    headers = ["rollout", "vision encodes per row", "tower items, whole step", "step", "step CPU"]
    ratio, calls = encodes["before_over_after"], encodes["after"]["calls_per_row"]
    summary = (
        f"- before / after ({encodes['rows']} rows, `get_clip` calls per row {calls:g}): "
        f"vision encodes per row {ratio['vision_encodes_per_row']:.2f}x, tower items "
        f"{ratio['tower_items_step']:.2f}x, step time {ratio['step_s']:.2f}x (CPU "
        f"{ratio['step_cpu_s']:.2f}x; medians of {encodes['repeats']} steps per arm)"
    )
    return [harness.markdown_table(headers, rows), "", summary]
