"""configs/videoauto_r1.yaml (issue 49 item 4): its published values, and its CPU variant
training on synthetic video QA with the answer-twice reward. A scripted policy writes the
answers (right, revised, declined), whatever a tiny model would sample."""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import pytest
import torch

from tests.trainer.runs import async_recipe_rows
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.data.published_prompts import VIDEOAUTO_SYSTEM
from videorl.models.generate import Generation
from videorl.rollout.engine import HFEngine
from videorl.trainer.build import build_state
from videorl.trainer.step import STAGES, train_step

SCRIPT = "VideoAuto-R1 train_qwen2.5vl_grpo_auto_text_image_video.sh"
PUBLISHED = [
    ("model.path", "Qwen/Qwen2.5-VL-7B-Instruct", SCRIPT + " --model_path"),
    ("model.freeze_vision", True, "--tune_mm_vision False"),
    ("reward.mode", "videoauto_r1", "--reward_funcs ..1 ..2 format_twice_boxed, 0.9 1.1 1"),
    ("data.prompt_style", "videoauto_r1", "data_rl.py COT_SYSTEM_PROMPT_ANSWER_TWICE"),
    ("data.max_prompt_tokens", 8192, "--max_prompt_length 8192"),
    ("rollout.n", 16, "--num_generations 16"),
    ("rollout.max_new_tokens", 2048, "--max_completion_length 2048"),
    ("rollout.temperature", 1.0, "arguments.py temperature 1.0"),
    ("rollout.gpu_memory_utilization", 0.4, "--vllm_gpu_memory_utilization 0.4"),
    ("algorithm.loss.kl_coef", 0.01, "--beta 0.01"),
    ("algorithm.loss.aggregation", "seq-mean-token-mean", "arguments.py loss_type grpo"),
    ("algorithm.grpo.std_eps", 1e-4, "grpo_vllm_trainer_qwen2_5_vl.py line 1346"),
    ("algorithm.loss.clip_low", 0.2, "arguments.py epsilon 0.2"),
    ("optim.lr", 1e-6, "--learning_rate 1e-6"),
    ("optim.weight_decay", 0.01, "--weight_decay 0.01"),
    ("optim.grad_clip", 1.0, "--max_grad_norm 1.0"),
    ("optim.mini_batches", 8, "--steps_per_generation 8"),
    ("video.max_frames", 256, "--max_frames 256"),
    ("video.min_pixels", 16 * 28 * 28, "--video_min_pixels"),
    ("video.max_pixels", 768 * 28 * 28, "--video_max_pixels"),
    ("video.total_pixels", 4096 * 28 * 28, "--video_total_pixels"),
    ("video.image_min_pixels", 4 * 28 * 28, "--image_min_pixels"),
    ("video.image_max_pixels", 768 * 28 * 28, "--image_max_pixels"),
    ("trainer.epochs", 1, "--num_train_epochs 1"),
    ("trainer.save_every", 200, "--save_steps 200"),
    ("trainer.nproc", 32, "torchrun --nproc_per_node=8 --nnodes=4"),
]


@pytest.mark.parametrize("key, value, source", PUBLISHED, ids=lambda v: str(v)[:40])
def test_recipe_has_the_published_value(key, value, source):
    config = load_config(resolve_config_path("videoauto_r1"))
    assert reduce(getattr, key.split("."), config) == value, source


@pytest.fixture(scope="module")
def qa_train(tmp_path_factory):
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize

    out = tmp_path_factory.mktemp("videoauto_data")
    records = load_records(synthesize(out, ["video_qa"], n=4, seed=2)).records
    # a question per record, so that the script can tell from the prompt which is asked
    records = [replace(r, problem=f"{r.problem} (clip {r.id})") for r in records]
    write_records(out / "train.jsonl", records)
    return out / "train.jsonl", records


class ScriptedEngine(HFEngine):
    """Sample k of each group: right twice, right after a wrong a1, declined then right,
    wrong twice (the letter is read back from the prompt's record by the test)."""

    def __init__(self, loaded, letters):
        super().__init__(loaded)
        self.letters, self.prompts = letters, []

    def generate(self, prompts, params):
        self.prompts.extend(prompts)
        eos, tokenizer = self.loaded.eos_token_ids[0], self.loaded.tokenizer
        out = []
        for prompt in prompts:
            text = tokenizer.decode(prompt.input_ids)
            right = next(v for k, v in self.letters.items() if k in text)
            wrong = "A" if right != "A" else "B"
            texts = [
                f"\\boxed{{{right}}}<think>sure</think>\\boxed{{{right}}}",
                f"\\boxed{{{wrong}}}<think>no</think>\\boxed{{{right}}}",
                f"\\boxed{{Let's analyze the problem step by step.}}<think>so</think>\\boxed{{{right}}}",
                f"\\boxed{{{wrong}}}<think>hm</think>\\boxed{{{wrong}}}",
            ][: params.n]
            ids = [
                torch.tensor(tokenizer(t, add_special_tokens=False)["input_ids"] + [eos])
                for t in texts
            ]
            out.append(Generation(ids, [], [False] * len(ids)))
        return out


def test_cpu_variant_trains_on_the_answer_twice_reward(tiny_model_dir, qa_train, tmp_path):
    path, records = qa_train
    overrides = [
        f"model.path={tiny_model_dir('qwen2_5_vl')}",
        f"data.train={path}",
        f"trainer.output_dir={tmp_path / 'run'}",
        "trainer.steps=1",
        "trainer.tensorboard=false",
    ]
    config = load_config(resolve_config_path("videoauto_r1_quickstart"), overrides)
    state = build_state(config, None)
    # each record's question text (its problem) tells the script which letter is right
    letters = {r.problem: r.answer.letter for r in records}
    state.engine = engine = ScriptedEngine(state.engine.loaded, letters)
    seen = {}

    def spy_update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=spy_update))
    assert torch.isfinite(torch.tensor(metrics["actor/loss"]))
    assert VIDEOAUTO_SYSTEM.splitlines()[1] in state.engine.loaded.tokenizer.decode(
        engine.prompts[0].input_ids
    )
    batch = seen["batch"]
    overall = [parts["overall"] for parts in batch.scored_components()]
    expected = [0.9 + 1.1 + 1.0, 1.1 + 1.0, 1.1 + 1.0 + 0.3, 1.0]
    assert overall == pytest.approx(expected * (len(overall) // 4))


def test_cpu_variant_trains_with_the_tiny_models_own_samples(tiny_model_dir, qa_train, tmp_path):
    path, _ = qa_train
    overrides = [
        f"model.path={tiny_model_dir('qwen2_5_vl')}",
        f"data.train={path}",
        f"trainer.output_dir={tmp_path / 'run'}",
        "trainer.steps=1",
        "trainer.tensorboard=false",
        "rollout.max_new_tokens=16",
    ]
    config = load_config(resolve_config_path("videoauto_r1_quickstart"), overrides)
    state = build_state(config, None)
    seen = {}

    def spy_update(ctx, batch):
        seen["batch"] = batch
        return STAGES.update(ctx, batch)

    metrics = train_step(state, state.sampler.next_batch(), replace(STAGES, update=spy_update))
    assert torch.isfinite(torch.tensor(metrics["actor/loss"]))
    for parts in seen["batch"].scored_components():  # every row scored by the answer-twice mode
        expected = 0.9 * parts["answer1"] + 1.1 * parts["answer2"] + parts["format"]
        assert parts["overall"] == pytest.approx(expected + 0.3 * parts["fallback"])


@pytest.mark.slow  # spawns a rollout worker process
def test_cpu_variant_trains_in_async(qa_train, tiny_model_dir, tmp_path):
    """The answer-twice reward run in the rollout worker, a version behind."""
    rows = async_recipe_rows(
        "videoauto_r1_quickstart", tiny_model_dir("qwen2_5_vl"), qa_train[0], tmp_path / "run"
    )
    assert sorted(rows) == [1, 2]
    assert rows[2]["async/staleness_max"] == 1
