"""bench/tools.py: its two arms are valid configs that differ only in the tools (SFT target and
rollout.tools), and `--quick` runs end to end in one process (SFT, RL, eval --tools for both
arms) at the smallest sizes: a smoke run, well under a minute alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.bench import BENCH, bench_module


@pytest.fixture(scope="module")
def bench():
    return bench_module("tools")


@pytest.fixture(scope="module")
def mechanisms():
    return bench_module("tool_mechanisms")


def _load(recipe: str, overrides: list[str]):
    from videorl.api import resolve_config_path
    from videorl.config import load_config

    return load_config(resolve_config_path(recipe), overrides)


def test_the_arms_differ_in_the_tools_only(bench):
    # without validation, as the bench runs them (validation with tools refuses val_controls)
    sft = {
        (arm, name): _load("sft_quickstart", [*bench.VIDEO, *extra, "data.val=null"])
        for arm, a in bench.ARMS.items()
        for name, _, extra in a["sft"]
    }
    rl = {arm: _load("tools_quickstart", a["rl"]) for arm, a in bench.ARMS.items()}
    read, mix, direct = sft["tools", "read"], sft["tools", "mix"], sft["direct", "direct"]
    assert read.sft.target == mix.sft.target == "tool_trajectory"
    assert read.rollout.tools == mix.rollout.tools == ("get_clip",)
    assert (read.sft.tool_call_fraction, mix.sft.tool_call_fraction) == (1.0, 0.5)
    assert direct.sft.target == "annotation" and direct.rollout.tools == ()
    assert read.video == direct.video == rl["tools"].video == rl["direct"].video  # same frames
    assert rl["tools"].video.tool_max_frames == 32  # 2 fps over 16 s, as the start reads
    assert rl["tools"].rollout.tools == ("get_clip",) and rl["direct"].rollout.tools == ()
    assert (
        rl["tools"].algorithm == rl["direct"].algorithm and rl["tools"].optim == rl["direct"].optim
    )
    # one model turn holds the gold call with the tiny models' tokenizer (66 tokens + EOS)
    assert rl["tools"].rollout.max_new_tokens >= 67


def test_the_direct_arm_gets_as_many_sft_steps(bench):
    counts = {arm: [count for _, count, _ in a["sft"]] for arm, a in bench.ARMS.items()}
    assert counts == {"tools": ["read_steps", "mix_steps"], "direct": ["all_steps"]}


@pytest.mark.slow
def test_quick_run_writes_both_arms(tmp_path):
    out = tmp_path / "tools.json"
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "tools.py"),
            "--quick",
            "--work",
            str(tmp_path),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=200,  # ~35 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    saved = json.loads(out.read_text())
    assert [row["arm"] for row in saved["table"]] == ["tools", "direct"]
    for arm in saved["arms"].values():
        assert len(arm["rl"]["calls_per_row"]) == 1
        assert sum(len(stage["loss"]) for stage in arm["sft"]["stages"].values()) == 2
        for stage in ("sft_eval", "rl_eval"):
            assert 0 <= arm[stage]["mIoU_with_tools"] <= 100
    direct = saved["arms"]["direct"]["rl"]
    assert direct["calls_per_row"] == [0.0]  # no tools in the prompt, no calls counted
    assert "| tools |" in done.stdout and "| direct |" in done.stdout


def test_the_docs_show_the_saved_results(bench):
    saved = json.loads((bench.RESULTS / "tools.json").read_text())
    committed = bench_module("harness").marked_text(bench.PAGE, "bench/tools.py")
    assert committed == bench.tables(saved), (
        "stale: run PYTHONPATH=src python bench/tools.py --write"
    )


def _flat(config) -> dict:
    from dataclasses import asdict

    def walk(prefix, value):
        if isinstance(value, dict):
            for key, item in value.items():
                yield from walk(f"{prefix}{key}.", item)
        else:
            yield prefix.rstrip("."), value

    return dict(walk("", asdict(config)))


ARM_KEYS = {  # what each mechanism's trained arms differ in, in SFT and RL
    "parallel": ({"rollout.max_calls_per_turn"}, {"rollout.max_calls_per_turn"}),
    "subagents": (set(), {"rollout.subagents"}),
    "turns": (set(), {"algorithm.turn_rewards"}),
    "retrieval": (
        {"sft.target", "rollout.tools"},
        {"rollout.tools", "rollout.frame_search.verify"},
    ),
    "multi_answer": (
        {"sft.target", "data.prompt_style"},
        {"data.prompt_style", "reward.mode"},
    ),
}


def _arm_config(mechanisms, name: str, arm: str, stage: str):
    spec = mechanisms.MECHANISMS[name]
    extra = [*spec["sft"], *mechanisms.SFT_SETTINGS] if stage == "sft" else []
    return _flat(
        _load(spec["recipe"], [*spec["shared"], *extra, *spec["arms"][arm].get(stage, [])])
    )


def test_each_mechanisms_arms_differ_in_its_key_only(mechanisms):
    trained = {k: v for k, v in mechanisms.MECHANISMS.items() if k != "early_exit"}
    assert set(trained) == set(ARM_KEYS)
    for name, spec in trained.items():
        for stage, keys in zip(("sft", "rl"), ARM_KEYS[name], strict=True):
            on, off = (_arm_config(mechanisms, name, arm, stage) for arm in spec["arms"])
            assert {k for k in on if on[k] != off[k]} == keys, (name, stage)


def test_the_early_exit_arms_evaluate_one_model_with_and_without_the_gate(mechanisms):
    arms = mechanisms.MECHANISMS["early_exit"]["arms"]
    assert {arm["model_from"] for arm in arms.values()} == {("multi_answer", "answer_twice")}
    assert [arm.get("eval", []) for arm in arms.values()] == [
        [],
        ["--early-exit-confidence", mechanisms.EXIT_CONFIDENCE],
    ]


def test_the_two_event_prompt_misses_the_flashes(mechanisms, tmp_path):
    """Each half of a two-event video holds one 1 s flash, the prompt's frames (one per 4 s,
    as the tool arms see them) show neither, and the crops of each half at 1 fps, the
    recipe prompt of the answer-twice arms and the reading stage's (8 frames) show each
    once: the answer needs both halves looked at."""
    from videorl.data.loaders import load_records
    from videorl.video.decode import VideoConfig, decode_video

    files = mechanisms.write_two_events(tmp_path, n=12, val=8, seed=0)
    records = load_records(files["train"]).records + load_records(files["val"]).records
    sparse = VideoConfig(fps=0.25, min_frames=2, max_frames=2)
    dense = VideoConfig(fps=2.0, min_frames=4, max_frames=8)  # videoauto_r1_quickstart's
    read = _load(mechanisms.READ_RECIPE, mechanisms.READ).video  # the reading stage's
    read = VideoConfig(fps=read.fps, min_frames=read.min_frames, max_frames=read.max_frames)
    for record in records:
        (a0, a1), (b0, b1) = record.extra["flashes"]
        assert 0 < a0 < a1 <= 4.0 <= b0 < b1 < 8.0  # one in each half
        path = tmp_path / record.video.path
        for config, shown in ((sparse, 0), (dense, 1), (read, 1)):
            times = decode_video(path, config).meta.timestamps
            for lo, hi in ((a0, a1), (b0, b1)):
                assert sum(lo <= t < hi for t in times) == shown, (record.id, times)
        crops = [float(s) for s in range(8)]  # crop_video of [0, 4) and [4, 8) at 1 fps
        assert all(sum(lo <= t < hi for t in crops) == 1 for lo, hi in ((a0, a1), (b0, b1)))


def _colours_shown(frames) -> list[str]:
    """The named colour (`synth_scene.COLORS`) nearest to the mean of each frame's pixels off
    the background, in order; frames showing no shape are left out."""
    import torch

    from videorl.data.synth_scene import BACKGROUND, COLORS

    shown = []
    for frame in frames:
        pixels = frame.reshape(3, -1).float()
        off = pixels[:, (pixels - torch.tensor(BACKGROUND)[:, None]).abs().sum(0) > 90]
        if off.shape[1] >= 20:
            mean = off.mean(1)
            shown.append(min(COLORS, key=lambda c: float((mean - torch.tensor(COLORS[c])).norm())))
    return shown


@pytest.mark.parametrize("name", ["parallel", "turns"])
def test_the_gold_tool_turns_show_both_flashes_and_answer_right(mechanisms, tmp_path, name):
    """The gold trajectory of an arm that reads its tools' frames (`reads_tools`), its calls
    run by the real tools: the frames they return, decoded, show the first colour then the
    second (each in one frame), and its last turn answers the record's letter."""
    from videorl.data.loaders import load_records
    from videorl.rollout.tools import ToolContext, ToolRunner, resolve_tools
    from videorl.rollout.tools.gold import gold_turns
    from videorl.rollout.tools.parsing import parse_tool_calls
    from videorl.video.cache import VideoCache

    assert mechanisms.reads_tools(name)
    spec = mechanisms.MECHANISMS[name]
    config = _load(spec["recipe"], [*spec["shared"], *spec["sft"]])
    runner = ToolRunner(resolve_tools(config.rollout.tools, config.rollout.tool_modules))
    videos = VideoCache(config.video)
    files = mechanisms.write_two_events(tmp_path, n=8, val=1, seed=0)
    try:
        for record in load_records(files["train"]).records:
            assert record.media is not None
            video = videos.get(record.media)
            context = ToolContext(media=record.media, video=video, config=config.video)
            turns = gold_turns(
                record, video, config.data.think, context.limits, True, config.rollout.tools,
                config.rollout.max_calls_per_turn,
            )  # fmt: skip
            calls = [call for turn in turns[:-1] for call in parse_tool_calls(turn)]
            outcomes = runner.run_all(calls, context)
            assert all(outcome.ok for outcome in outcomes), [o.error for o in outcomes]
            frames = [frame for o in outcomes for media in o.media for frame in media.frames]
            assert _colours_shown(frames) == record.extra["colours"], record.id
            assert turns[-1].endswith(f"<answer>{record.answer.letter}</answer>")
    finally:
        runner.close()


def test_the_two_event_answers_need_both_halves_and_are_balanced(mechanisms, tmp_path):
    """The four options are (red or blue) then (green or magenta) in every record: the right
    one is the first half's colour then the second's, every other option is wrong on one
    half or both, and each split's answers are spread evenly over A-D, so a blind or
    majority answer scores 25%."""
    from collections import Counter

    from videorl.data.loaders import load_records

    files = mechanisms.write_two_events(tmp_path, n=16, val=12, seed=3)
    options = mechanisms.TWO_EVENTS_OPTIONS
    for split in ("train", "val"):
        records = load_records(files[split]).records
        counts = Counter(record.answer.letter for record in records)
        assert set(counts) == set("ABCD")
        assert max(counts.values()) / len(records) <= 1 / options + 0.02
        for record in records:
            first, second = record.extra["colours"]
            assert len(record.options) == options
            right = "ABCD".index(record.answer.letter)
            assert record.options[right] == f"{first}, then {second}"
            firsts = [option.split(", then ")[0] for option in record.options]
            seconds = [option.split(", then ")[1] for option in record.options]
            assert Counter(firsts)[first] == 2 and len(set(firsts)) == 2
            assert Counter(seconds)[second] == 2 and len(set(seconds)) == 2
            assert not set(firsts) & set(seconds)  # the reversed video matches no option
            assert record.options == records[0].options  # the text never tells
    assert mechanisms.blind_best(files["val"]) == 25.0


def _fake_videorl(calls: list[tuple]):
    """A `videorl` that records its arguments and writes a one-step metrics.jsonl."""

    def command(*args: object) -> float:
        calls.append(args)
        out = Path(_arg(args, "trainer.output_dir"))
        out.mkdir(parents=True)
        row = {"step": 1, "time/step_cpu": 1.0, "sft/loss": 1.0, "reward/mean": 0.5}
        (out / "metrics.jsonl").write_text(json.dumps(row) + "\n")
        return 1.0

    return command


def _plan(mechanisms, tmp_path, calls, starts, rl_set=(), tool_sft_steps=None):
    command = _fake_videorl(calls)
    return mechanisms.Plan(
        tmp_path, 1, 1, 0, 1, starts, tuple(rl_set), command=command, tool_sft_steps=tool_sft_steps
    )


def _arg(args: tuple, key: str) -> str:
    return next(str(a).split("=", 1)[1] for a in args if str(a).startswith(f"{key}="))


def test_the_two_event_arms_start_from_the_read_model_and_retrieval_does_not(mechanisms, tmp_path):
    assert mechanisms.task_starts("seeing", None) == dict.fromkeys(mechanisms.TASKS, "seeing")
    calls: list[tuple] = []
    plan = _plan(mechanisms, tmp_path, calls, mechanisms.task_starts("seeing", "read"))
    data = {"train": "train.jsonl"}
    folders = {}
    for name, spec in mechanisms.MECHANISMS.items():
        for arm, arm_spec in spec["arms"].items():
            if "model_from" not in arm_spec:
                sft = mechanisms.sft_arm(name, arm, data, plan)
                folders[name, arm] = str(Path(sft["model"]).parent)
    # the model each SFT command started from (arms of equal overrides share one run)
    run_starts = {_arg(args, "trainer.output_dir"): _arg(args, "model.path") for args in calls}
    starts = {arm: run_starts[folder] for arm, folder in folders.items()}
    for (name, arm), start in starts.items():
        task = mechanisms.MECHANISMS[name]["data"]
        assert start == ("read" if task == "two_events" else "seeing"), (name, arm)
    assert {name for (name, _), start in starts.items() if start == "seeing"} == {"retrieval"}


@pytest.mark.parametrize("tool_steps", [None, 3])
def test_the_tool_reading_arms_get_the_tool_sft_steps_and_a_cosine_the_same_in_each_arm(
    mechanisms, tmp_path, tool_steps
):
    """`--mech-tool-sft-steps`: the two-event arms that read their tools' frames (parallel,
    subagents, turns) take that many SFT steps with a cosine decay, both arms of each alike;
    every other arm (and, without the option, every arm) keeps `--mech-sft-steps` at a
    constant rate."""
    calls: list[tuple] = []
    plan = _plan(mechanisms, tmp_path, calls, mechanisms.task_starts("s", "r"), (), tool_steps)
    data = {"train": "train.jsonl"}
    tool_arms = {"parallel", "subagents", "turns"}
    assert {name for name in mechanisms.MECHANISMS if mechanisms.reads_tools(name)} == tool_arms
    for name, spec in mechanisms.MECHANISMS.items():
        runs = []
        for arm, arm_spec in spec["arms"].items():
            if "model_from" not in arm_spec:
                folder = str(Path(mechanisms.sft_arm(name, arm, data, plan)["model"]).parent)
                args = next(a for a in calls if _arg(a, "trainer.output_dir") == folder)
                runs.append((_arg(args, "trainer.steps"), _schedules(args)))
        tools = tool_steps is not None and name in tool_arms
        expected = (str(tool_steps), ["constant", "cosine"]) if tools else ("1", ["constant"])
        assert all(run == expected for run in runs), (name, runs)


def _schedules(args: tuple) -> list[str]:
    return [str(a).split("=", 1)[1] for a in args if str(a).startswith("optim.schedule=")]


def test_the_rl_set_overrides_every_arms_rl_last_and_names_its_folder(mechanisms, tmp_path):
    calls: list[tuple] = []
    starts = mechanisms.task_starts("seeing", None)
    rl_set = ["optim.lr=3e-05", "rollout.n=8"]
    plan = _plan(mechanisms, tmp_path, calls, starts, rl_set)
    bare = _plan(mechanisms, tmp_path, calls, starts)
    data = {"train": "train.jsonl"}
    folders = {}
    for run in (plan, bare):
        for name, spec in mechanisms.MECHANISMS.items():
            for arm, arm_spec in spec["arms"].items():
                if "model_from" not in arm_spec:
                    trained = mechanisms.train_arm(name, arm, "sft-model", data, run)
                    folders[run.rl_set, name, arm] = trained["model"]
    with_set = [args for args in calls if "optim.lr=3e-05" in args]
    assert len(with_set) == len(calls) // 2  # every arm's RL of `plan`, none of `bare`'s
    for args in with_set:
        overrides = [a for a in args[2:] if not str(a).startswith(("model.", "data.", "trainer."))]
        assert overrides[-3:] == [*rl_set, "--overwrite"], args  # after the arm's own
    assert len(set(folders.values())) == len(folders)  # no run reuses another's folder
    with pytest.raises(ValueError, match="no_such_key"):  # a bad key fails before any run
        mechanisms.check_rl_set(("optim.no_such_key=1",))


@pytest.mark.slow
def test_quick_mechanisms_run_writes_a_row_per_arm(tmp_path, mechanisms):
    out = tmp_path / "tools.json"
    out.write_text(json.dumps({"table": "kept"}))
    command = [sys.executable, str(BENCH / "tools.py"), "--mechanisms", "--quick"]
    command += ["--work", str(tmp_path), "--out", str(out), "--mech-tool-sft-steps", "9"]
    done = subprocess.run(
        [*command, "--mech-rl-set", "optim.lr=3e-5"],
        capture_output=True,
        text=True,
        timeout=300,  # ~25 s of CPU alone (a read stage, six mechanisms): only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    saved = json.loads(out.read_text())
    assert saved["table"] == "kept"  # the tools-vs-direct rows stay
    entry = saved["mechanisms"]
    read, rows = entry["read"], entry["rows"]
    assert read["steps"] == 1 and read["start"] == entry["start"]["model"]
    assert set(mechanisms.CONTROLS) <= set(read["eval"]) and 0 <= read["eval"]["real"] <= 100
    assert [(r["mechanism"], r["arm"]) for r in rows] == [
        (name, arm) for name, spec in mechanisms.MECHANISMS.items() for arm in spec["arms"]
    ]
    for row in rows:
        assert row["mechanism"] == "early_exit" or len(row["rl"]["reward"]) == 1
        assert set(mechanisms.CONTROLS) <= set(row["eval"])
        assert 0 <= row["eval"]["real"] <= 100
        if "sft" in row:  # the two-event arms from the read model, retrieval from the seeing
            task = mechanisms.MECHANISMS[row["mechanism"]]["data"]
            start = read["model"] if task == "two_events" else entry["start"]["model"]
            assert row["sft"]["start"] == start, row["arm"]
            config = yaml.safe_load((Path(row["rl"]["model"]).parent / "config.yaml").read_text())
            assert config["optim"]["lr"] == 3e-5, row["arm"]  # --mech-rl-set reached its RL
            sft = yaml.safe_load((Path(row["sft"]["model"]).parent / "config.yaml").read_text())
            tools = mechanisms.reads_tools(row["mechanism"])  # 1 step in --quick, a cosine
            assert sft["optim"]["schedule"] == ("cosine" if tools else "constant"), row["arm"]
            assert row["sft"]["steps"] == 1, row["arm"]
    assert entry["rl_set"] == ["optim.lr=3e-5"]
    assert entry["command"].endswith(" --quick --mech-tool-sft-steps 1 --mech-rl-set optim.lr=3e-5")
    assert entry["tool_sft_steps"] == 1
    assert "| parallel | one_per_turn |" in done.stdout and "| read |" in done.stdout


def test_the_docs_show_the_saved_mechanism_rows(bench, mechanisms):
    saved = json.loads((bench.RESULTS / "tools.json").read_text())["mechanisms"]
    committed = bench_module("harness").marked_text(bench.PAGE, bench.MECHANISMS_TABLE)
    assert committed == mechanisms.tables(saved), (
        "stale: run PYTHONPATH=src python bench/tools.py --mechanisms --write"
    )
    arms = [(name, arm) for name, spec in mechanisms.MECHANISMS.items() for arm in spec["arms"]]
    saved_arms = [(row["mechanism"], row["arm"]) for row in saved["rows"]]
    assert saved_arms == arms[: len(saved_arms)]  # a run saves each mechanism in turn
    assert saved["complete"] == (saved_arms == arms)  # a cut run says so
