"""The method recipes reproduce the published setups (issue 16): key values against a table
of the published ones, each block naming its source, `--dry-run` printing them."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import reduce
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from videorl.api import CONFIG_DIR, resolve_config_path
from videorl.cli import app
from videorl.config import Config, load_config
from videorl.rollout.vllm_support import rollout_engine
from videorl.trainer.build import steps_from_epochs
from videorl.trainer.validation import validation_sampling

# (recipe, config key, published value, published source)
ORARL_4B = "HVision-NKU/OraRL configs/orarl_4b.yaml"
ORARL_9B = "HVision-NKU/OraRL configs/orarl_9b.yaml"
TARO = "oceanflowlab/TaRO scripts/run_qwen2_5_vl_7b.sh"
TARO_DATA = "oceanflowlab/TaRO src/vtg_dataset.py"
TARO_REWARD = "oceanflowlab/TaRO src/rewards.py"
OPDVR = "LeapLabTHU/OPDVR opdvr.sh"
VIDEO_R1 = "tulerfeng/Video-R1 src/scripts/run_grpo_vllm_qwen25vl.sh"
VIDEO_R1_TRAINER = "tulerfeng/Video-R1 src/r1-v/src/open_r1/trainer/grpo_trainer.py"
VIDEO_R1_VISION = "tulerfeng/Video-R1 src/qwen-vl-utils/src/qwen_vl_utils/vision_process.py"
GRPD = "LeapLabTHU/OPDVR grpd.sh"
DAPO = "volcengine/verl@4f80e46 recipe/dapo/run_dapo_qwen2.5_32b.sh"
GSPO = "volcengine/verl examples/gspo_trainer/test_gspo_3b_math.sh"
LONGVT = "EvolvingLMMs-Lab/LongVT examples/video_tools/longvt_7b_rl_train.sh"
LONGVT_TURNS = "LongVT examples/video_tools/config/timer1_multiturn_grpo.yaml"
LONGVT_TOOL = "LongVT examples/video_tools/mcp_server.py crop_video"
LONGVT_VIDEO = "LongVT README / examples/eval/single_inference.py (fps 1, 768, 224*224)"
VERL_DEFAULTS = "LongVT verl/trainer/config/actor/actor.yaml, rollout/rollout.yaml"
ORARL_COMMON = [
    ("data.think", False, "data.enable_thinking false"),
    ("data.chat_template_kwargs", {"enable_thinking": False}, "data.enable_thinking false"),
    ("data.prompt_style", "orarl", "eval/task/eval_prompt.py"),
    ("data.prompts_per_step", 64, "data.rollout_batch_size 64"),
    ("model.freeze_vision", True, "freeze_vision_tower true"),
    ("model.gradient_checkpointing", True, "enable_gradient_checkpointing true"),
    ("rollout.engine", "vllm", "worker.rollout.name vllm"),
    ("rollout.n", 8, "worker.rollout.n 8"),
    ("rollout.temperature", 1.0, "worker.rollout.temperature 1.0"),
    ("rollout.top_p", 0.85, "worker.rollout.top_p 0.85"),
    ("rollout.max_new_tokens", 4096, "data.max_response_length 4096"),
    ("video.fps", 2.0, "data.video_fps 2"),
    ("video.max_frames", 128, "data.video_max_frames 128"),
    ("video.max_pixels", 786432, "data.video_max_pixels 786432"),
    ("video.total_pixels", 8388608, "data.video_total_pixels 8388608"),
    ("video.min_pixels", 4096, "data.video_min_pixels 4096"),
    ("video.image_max_pixels", 1048576, "data.image_max_pixels 1048576"),
    ("video.image_min_pixels", None, "data.min_pixels 4096 (= video.min_pixels)"),
    ("algorithm.estimator", "orarl", "algorithm.name orarl"),
    ("reward.mode", "orarl", "worker.reward.reward_function orarl.rewards:compute_score"),
    ("algorithm.orarl.gain.gamma", 0.25, "directional_gain_gamma 0.25"),
    ("algorithm.orarl.anchor.scale", 2.0, "detached_oracle_advantage_scale 2.0"),
    ("algorithm.orarl.anchor.beta", 2.0, "oracle_reward_gate_beta 2.0"),
    ("algorithm.orarl.anchor.cap_factor", 1.2, "detached_oracle_match_best_ratio 1.2"),
    ("algorithm.pruning.prune_ratio", 0.5, "selection_prune_ratio 0.5"),
    ("algorithm.pruning.pos_quota", 1, "selection_positive_quota 1"),
    ("algorithm.pruning.neg_quota", 2, "selection_negative_quota 2"),
    ("algorithm.pruning.correction.min_scale", 0.25, "post_selection_rms_min_scale 0.25"),
    ("algorithm.loss.clip_low", 0.2, "clip_ratio_low 0.2"),
    ("algorithm.loss.clip_high", 0.2, "clip_ratio_high 0.2"),
    ("algorithm.loss.kl_coef", 0.0, "disable_kl true"),
    ("optim.schedule", "constant", "lr_scheduler_type constant"),
    ("optim.warmup_steps", 0, "lr_warmup_ratio 0.0"),
    ("optim.weight_decay", 0.0, "weight_decay 0.0"),
    ("optim.grad_clip", 1.0, "max_grad_norm 1.0"),
    ("trainer.epochs", 1, "trainer.total_epochs 1"),
    ("trainer.val_every", 0, "trainer.val_freq -1"),
    ("trainer.val_samples", 1, "val_override_config.n 1"),
    ("trainer.val_temperature", 0.7, "val_override_config.temperature 0.7"),
    ("trainer.val_top_p", 0.95, "val_override_config.top_p 0.95"),
    ("trainer.save_every", 50, "trainer.save_freq 50"),
    ("trainer.keep_last", 3, "trainer.save_limit 3"),
    ("trainer.seed", 42, "ORARL_SEED 42"),
    ("data.sampler", "orarl", "group_by_task true, group_by_task_key problem_type"),
]
PUBLISHED = {
    "orarl": [
        ("model.path", "Qwen/Qwen3.5-4B", ORARL_4B),
        ("optim.lr", 2e-6, "ORARL_LEARNING_RATE 2.0e-6"),
        ("data.max_prompt_tokens", 16384, "ORARL_MAX_PROMPT_LENGTH 16384"),
        ("rollout.gpu_memory_utilization", 0.5, ORARL_4B),
        *ORARL_COMMON,
    ],
    "orarl_9b": [
        ("model.path", "Qwen/Qwen3.5-9B", ORARL_9B),
        ("optim.lr", 1e-6, "ORARL_LEARNING_RATE 1.0e-6"),
        ("data.max_prompt_tokens", 24576, "ORARL_MAX_PROMPT_LENGTH 24576"),
        ("rollout.gpu_memory_utilization", 0.45, ORARL_9B),
        *ORARL_COMMON,
    ],
    "taro": [
        ("model.path", "Qwen/Qwen2.5-VL-7B-Instruct", TARO),
        ("model.reference_path", "Qwen/Qwen2.5-VL-7B-Instruct", "use_kl_loss=True"),
        ("model.freeze_vision", True, "freeze_vision_tower=True"),
        ("optim.lr", 1e-6, "actor.optim.lr=1e-6"),
        ("optim.warmup_steps", 0, "verl lr_warmup_steps_ratio 0.0"),
        ("optim.weight_decay", 0.01, "verl actor.optim.weight_decay 0.01"),
        ("algorithm.loss.kl_coef", 0.01, "kl_loss_coef=0.01"),
        ("algorithm.loss.kl_type", "k3", "kl_loss_type=low_var_kl"),
        ("algorithm.estimator", "grpo", "adv_estimator=grpo"),
        ("algorithm.constructed.enabled", True, "+trainer.warmup_epochs=1"),
        ("algorithm.constructed.curriculum.schedule", "hard", "enable_linear_warmup unset"),
        ("algorithm.constructed.curriculum.warmup_epochs", 1, "+trainer.warmup_epochs=1"),
        ("algorithm.constructed.off_policy.mode", "mask", "+algorithm.off_policy_mode=mask"),
        ("algorithm.constructed.off_policy.exact", True, "verl/trainer/ppo/core_algos.py"),
        ("data.prompts_per_step", 16, "data.train_batch_size=16"),
        ("data.prompt_style", "taro", "data/train.json prompt"),
        ("data.max_prompt_tokens", 7168, "data.max_prompt_length=7168"),
        ("rollout.engine", "vllm", "ENGINE=vllm"),
        ("rollout.n", 8, "rollout.n=8"),
        ("rollout.max_new_tokens", 1024, "data.max_response_length=1024"),
        ("rollout.max_model_len", 8192, "engine_kwargs.vllm.max_model_len=8192"),
        ("trainer.epochs", 3, "trainer.total_epochs=3"),
        ("trainer.val_temperature", 0.0, "verl val_kwargs temperature 0"),
        ("trainer.val_samples", 1, "verl val_kwargs n 1"),
        ("video.total_pixels", 3584 * 28 * 28, TARO_DATA),
        ("video.min_pixels", 4 * 28 * 28, TARO_DATA),
        ("video.max_frames", 768, TARO_DATA),
        ("reward.composition", "sum", TARO_REWARD),
        ("reward.think_required", True, TARO_REWARD),
        ("reward.tg_shaping", "iou_v2", TARO_REWARD),
        ("reward.tg_parser", "taro", TARO_REWARD),
        ("reward.sensitivity.alpha", 0.3, "temp_alpha=0.3"),
        ("reward.sensitivity.margin", 0.0, "temp_margin=0.0"),
        ("reward.sensitivity.gate", 0.7, "temp_iou_thresh=0.7"),
        ("reward.sensitivity.shuffle", "taro", "src/utils.py shuffle_boundary_frames"),
        ("reward.sensitivity.radius", 3.0, "shuffle_boundary_frames(time_radius=3)"),
        ("reward.sensitivity.threshold", "group_mean", "temp_diff_thresh=mean"),
    ],
    "tgrpo": [
        ("model.path", "Video-R1/Qwen2.5-VL-7B-COT-SFT", "README: the released SFT model"),
        ("model.freeze_vision", False, VIDEO_R1_TRAINER),
        ("algorithm.estimator", "grpo", VIDEO_R1_TRAINER),
        ("algorithm.temporal_contrast.enabled", True, "--temporal true"),
        ("algorithm.temporal_contrast.margin", 0.8, "acc_mean >= 0.8 * shuffled_acc_mean"),
        ("algorithm.temporal_contrast.bonus", 0.3, "temporal_rewards_per_func[mask, 0] + 0.3"),
        ("algorithm.temporal_contrast.n_shuffled", 4, "num_generations // 2"),
        ("algorithm.temporal_contrast.correct_threshold", 0.1, "rewards_per_func[:, 0] > 0.1"),
        ("algorithm.grpo.std_eps", 1e-4, "(rewards - mean) / (std + 1e-4)"),
        ("reward.length_band.enabled", True, "--len_control true"),
        ("reward.length_band.min", 320, "320 <= lenth_list[idx] <= 512"),
        ("reward.length_band.max", 512, "320 <= lenth_list[idx] <= 512"),
        ("reward.length_band.bonus", 0.2, "rewards[idx] += 0.2"),
        ("algorithm.loss.kl_coef", 0.04, "--beta 0.04"),
        ("algorithm.loss.kl_type", "k3_unclipped", VIDEO_R1_TRAINER),
        ("algorithm.loss.aggregation", "seq-mean-token-mean", VIDEO_R1_TRAINER),
        ("rollout.n", 8, "--num_generations 8"),
        ("rollout.temperature", 1.0, "--temperature 1.0"),
        ("rollout.top_p", 0.95, "SamplingParams top_p 0.95"),
        ("rollout.max_new_tokens", 768, "--max_completion_length 768"),
        ("data.max_prompt_tokens", 16384, "--max_prompt_length 16384"),
        ("data.prompts_per_step", 4, "per_device_train_batch_size 1 x 4 ranks"),
        ("data.prompt_style", "video_r1", "grpo.py QUESTION_TEMPLATE, TYPE_TEMPLATE"),
        ("data.train", "Video-R1-data/Video-R1-260k.json", "--dataset_name"),
        ("data.format", "video_r1", "grpo.py: problem_type, data_type, solution, path"),
        (
            "data.group_by_family",
            False,
            "transformers Trainer RandomSampler (grpo_trainer.py: Trainer)",
        ),
        ("optim.lr", 1e-6, "--learning_rate 1e-6"),
        ("optim.schedule", "cosine", "--lr_scheduler_type cosine"),
        ("optim.schedule_steps", 65000, "--num_train_epochs 1: ~260k rows / 4 per step"),
        ("optim.weight_decay", 0.01, "--weight_decay 0.01"),
        ("optim.grad_clip", 5.0, "--max_grad_norm 5"),
        ("reward.composition", "sum", "rewards_per_func.sum(dim=1)"),
        (
            "reward.mode",
            "video_r1",
            "grpo.py accuracy_reward / format_reward: first <answer>, exact choice string",
        ),
        ("video.fps", 2.0, VIDEO_R1_VISION),
        ("video.max_frames", 16, "FPS_MAX_FRAMES 16"),
        ("video.max_pixels", 128 * 28 * 28, "VIDEO_MAX_PIXELS 128*28*28"),
        ("video.image_min_pixels", 4 * 28 * 28, "MIN_PIXELS 4*28*28 (images)"),
        ("video.image_max_pixels", 256 * 28 * 28, "MAX_PIXELS 256*28*28 (images)"),
        (
            "video.time_encoding",
            "processor_default",
            "grpo_trainer.py: processing_class(...) without video_kwargs' fps",
        ),
        ("trainer.steps", 1200, "README: 1.2k RL steps"),
        ("trainer.save_every", 100, "--save_steps 100"),
        ("trainer.nproc", 4, "--nproc_per_node 4"),
    ],
    "opdvr": [
        ("algorithm.estimator", "opdvr", OPDVR),
        ("rollout.n", 1, "N_RESPONSES 1"),
        ("algorithm.distill.topk", 0, "LOG_PROB_TOP_K 0"),
    ],
    "grpd": [
        ("algorithm.estimator", "grpd", GRPD),
        ("rollout.n", 8, "N_RESPONSES 8"),
        ("algorithm.distill.group_std", True, "GRPO_NORM_BY_STD True"),
        ("algorithm.distill.baseline", 0.0, "GRPO_SCALE_BASELINE 0.0"),
    ],
}
PUBLISHED["dapo"] = [
    ("algorithm.estimator", "grpo", "adv_estimator=grpo"),
    ("algorithm.loss.name", "ppo", "verl policy_loss vanilla"),
    ("algorithm.loss.clip_low", 0.2, "clip_ratio_low=0.2"),
    ("algorithm.loss.clip_high", 0.28, "clip_ratio_high=0.28"),
    ("algorithm.loss.dual_clip", 10.0, "clip_ratio_c=10.0"),
    ("algorithm.loss.aggregation", "token-mean", "loss_agg_mode=token-mean"),
    ("algorithm.loss.kl_coef", 0.0, "use_kl_loss=False"),
    ("algorithm.loss.entropy_coef", 0.0, "entropy_coeff=0"),
    ("reward.overlong.enabled", True, "enable_overlong_buffer=True"),
    ("reward.overlong.buffer_len", 4096, "overlong_buffer_len=1024*4"),
    ("reward.overlong.penalty_factor", 1.0, "overlong_penalty_factor=1.0"),
    ("algorithm.dynamic_sampling.enabled", True, "enable_filter_groups=True"),
    ("algorithm.dynamic_sampling.metric", "task", "filter_groups_metric=acc"),
    ("algorithm.dynamic_sampling.max_draws", 10, "max_num_gen_batches=10"),
    ("algorithm.dynamic_sampling.batches_per_draw", 3, "gen_prompt_bsz=train_prompt_bsz*3"),
    ("algorithm.dynamic_sampling.on_cap", "error", "dapo_ray_trainer.py: raise ValueError"),
    ("rollout.n", 16, "n_resp_per_prompt=16"),
    ("rollout.temperature", 1.0, "temperature=1.0"),
    ("rollout.top_p", 1.0, "top_p=1.0"),
    ("rollout.max_new_tokens", 20480, "max_response_length=1024*20"),
    (
        "rollout.gpu_memory_utilization",
        0.7,
        "rollout.gpu_memory_utilization=0.7 at 4f80e46 (0.80 in mainline d5a44da, ed498f9)",
    ),
    ("trainer.val_before_train", True, "trainer.val_before_train=True (set by the script)"),
    ("data.prompts_per_step", 512, "train_prompt_bsz=512"),
    ("optim.mini_batches", 16, "train_prompt_mini_bsz=32"),
    ("optim.lr", 1e-6, "optim.lr=1e-6"),
    ("optim.warmup_steps", 10, "optim.lr_warmup_steps=10"),
    ("optim.weight_decay", 0.1, "optim.weight_decay=0.1"),
    ("optim.grad_clip", 1.0, "grad_clip=1.0"),
    ("trainer.epochs", 1, "trainer.total_epochs=1"),
    ("trainer.val_every", 5, "trainer.test_freq=5"),
    ("trainer.save_every", 5, "trainer.save_freq=5"),
    ("trainer.val_top_p", 0.7, "val_top_p=0.7"),
    ("trainer.val_samples", 1, "val_kwargs.n=1"),
]
PUBLISHED["gspo"] = [
    ("algorithm.estimator", "grpo", "adv_estimator=grpo"),
    ("algorithm.loss.name", "gspo", "loss_mode=gspo"),
    ("algorithm.loss.clip_low", 3e-4, "clip_ratio_low=0.0003 (paper 5.1)"),
    ("algorithm.loss.clip_high", 4e-4, "clip_ratio_high=0.0004 (paper 5.1)"),
    ("algorithm.loss.aggregation", "seq-mean-token-mean", "loss_agg_mode=seq-mean-token-mean"),
    ("algorithm.loss.kl_coef", 0.0, "use_kl_loss=false"),
    ("reward.overlong.enabled", False, "enable_overlong_buffer=false"),
    ("rollout.n", 16, "n_resp_per_prompt=16"),
    ("rollout.temperature", 1.0, "temperature=1.0"),
    ("rollout.max_new_tokens", 8192, "max_response_length=1024*8"),
    ("data.prompts_per_step", 512, "train_batch_size=512"),
    ("optim.mini_batches", 4, "ppo_mini_batch_size=128 (paper: four mini-batches)"),
    ("optim.lr", 1e-6, "optim.lr=1e-6"),
    ("optim.warmup_steps", 25, "lr_warmup_steps_ratio=0.05 x 500 steps"),
    ("optim.weight_decay", 0.1, "optim.weight_decay=0.1"),
    ("optim.grad_clip", 1.0, "grad_clip=1.0"),
    ("trainer.steps", 500, "total_training_steps=500"),
    ("trainer.val_every", 10, "test_freq=10"),
    ("trainer.save_every", 10, "save_freq=10"),
    ("trainer.val_top_p", 0.7, "val_top_p=0.7"),
]
PUBLISHED["longvt"] = [
    ("model.path", "longvideotool/LongVT-7B-SFT", LONGVT + ": MODEL_PATH, the SFT model"),
    ("model.reference_path", "longvideotool/LongVT-7B-SFT", "use_kl_loss=True"),
    ("model.freeze_vision", False, "LongVT's verl has no freeze_vision_tower"),
    ("model.gradient_checkpointing", True, "enable_gradient_checkpointing=True"),
    ("model.sequence_parallel_size", 4, "ulysses_sequence_parallel_size=4"),
    ("algorithm.estimator", "grpo", "adv_estimator=grpo"),
    ("algorithm.loss.clip_low", 0.2, VERL_DEFAULTS),
    ("algorithm.loss.clip_high", 0.2, VERL_DEFAULTS),
    ("algorithm.loss.dual_clip", 3.0, "clip_ratio_c 3.0 (verl default)"),
    (
        "algorithm.loss.aggregation",
        "seq-mean-token-mean",
        "dp_actor.py: token-mean per one-row micro-batch (ppo_micro_batch_size_per_gpu=1)",
    ),
    ("algorithm.loss.kl_coef", 0.001, "kl_loss_coef=0.001"),
    ("algorithm.loss.kl_type", "k3", "kl_loss_type=low_var_kl"),
    ("algorithm.loss.entropy_coef", 0.0, "entropy_coeff=0"),
    ("optim.lr", 1e-6, "actor.optim.lr=1e-6"),
    ("optim.weight_decay", 0.01, VERL_DEFAULTS),
    ("optim.warmup_steps", 0, "lr_warmup_steps_ratio 0.0 (verl default)"),
    ("optim.grad_clip", 1.0, "grad_clip 1.0 (verl default)"),
    ("optim.mini_batches", 2, "ppo_mini_batch_size=8 of train_batch_size=16"),
    ("optim.epochs", 1, "ppo_epochs 1 (verl default)"),
    ("data.prompts_per_step", 16, "data.train_batch_size=16"),
    ("data.max_prompt_tokens", 36000, "data.max_prompt_length=36000"),
    ("data.think", True, "<think>...</think> <tool_call>... <answer>... (vl_agent.py)"),
    ("data.video_as_images", True, "data.sglang_video=True (rl_dataset.py lines 253-284)"),
    ("rollout.n", 16, "rollout.n=16"),
    ("rollout.temperature", 1.0, VERL_DEFAULTS),
    ("rollout.top_p", 1.0, VERL_DEFAULTS),
    ("rollout.max_new_tokens", 16384, "data.max_response_length=16384"),
    ("rollout.max_total_tokens", 16384, "data.max_response_length=16384 (whole trajectory)"),
    ("rollout.max_turns", 5, LONGVT_TURNS + " max_assistant_turns: 5"),
    ("rollout.tools", ("crop_video",), "mcp_tool_config.yaml tool_selected_list"),
    ("rollout.tool_modules", ("videorl.rollout.tools.longvt",), LONGVT_TOOL),
    ("reward.plugins", {"video_qa": "videorl.rewards.longvt:score"}, "use_iou_reward=True"),
    ("reward.judge.style", "longvt", "custom_rewards/vl_agent.py get_prompt, compute_score"),
    ("reward.judge.max_tokens", None, "vl_agent.py: chat.completions.create without max_tokens"),
    ("reward.judge.temperature", 0.3, "vl_agent.py: temperature=0.3"),
    ("video.fps", 1.0, LONGVT_VIDEO),
    ("video.max_frames", 768, LONGVT_VIDEO),
    ("video.max_pixels", 224 * 224, LONGVT_VIDEO),
    ("video.min_pixels", 28 * 28, LONGVT_VIDEO),
    ("trainer.epochs", 5, "trainer.total_epochs=5"),
    ("trainer.save_every", 10, "trainer.save_freq=10"),
    ("trainer.val_every", 5, "trainer.test_freq=5"),
    ("trainer.val_before_train", True, "trainer.val_before_train=True"),
    ("trainer.nproc", 64, "n_gpus_per_node=8 x NNODES=8"),
    ("trainer.val_temperature", 0.0, "verl val_kwargs temperature 0"),
    ("trainer.val_samples", 1, "verl val_kwargs n 1"),
]
for _recipe, _source in (("opdvr", OPDVR), ("grpd", GRPD)):
    PUBLISHED[_recipe] += [
        ("data.prompts_per_step", 256, "MINI_BATCH_SIZE 256"),
        ("data.think", False, "enable_thinking=False"),
        ("data.shuffle", False, "data.shuffle=False"),
        ("data.max_prompt_tokens", 1024, "MAX_PROMPT_LENGTH 1024"),
        ("data.chat_template_kwargs", {"enable_thinking": False}, "enable_thinking=False"),
        ("rollout.engine", "vllm", "rollout.name=vllm"),
        ("rollout.temperature", 1.0, "TEMPERATURE 1.0"),
        ("rollout.max_new_tokens", 8192, "MAX_RESP_LENGTH 8192"),
        ("rollout.max_model_len", 1024 + 8192, "max_model_len"),
        ("algorithm.distill.threshold", 0.0, "CORRECTNESS_THRESHOLD 0.0"),
        ("algorithm.distill.gate_mode", "default", "CORRECTNESS_GATED_MODE default"),
        ("algorithm.distill.teacher_temperature", 1.0, "TEACHER_TEMPERATURE 1.0"),
        ("algorithm.loss.aggregation", "token-mean", "loss_agg_mode=token-mean"),
        ("algorithm.loss.kl_coef", 0.0, "USE_KL False"),
        ("optim.lr", 1e-6, "ACTOR_LR 1e-6"),
        ("optim.warmup_steps", 0, "verl lr_warmup_steps_ratio 0.0"),
        ("model.gradient_checkpointing", True, "enable_gradient_checkpointing=True"),
        ("trainer.epochs", 3, "TOTAL_EPOCHS 3"),
        ("trainer.save_every", 55, "SAVE_FREQ 55"),
        ("trainer.val_every", 22, "TEST_FREQ 22"),
        ("trainer.val_samples", 16, "val_kwargs.n=16 (avg@16)"),
    ]
CASES = [(recipe, *row) for recipe, rows in PUBLISHED.items() for row in rows]


@pytest.fixture(scope="module")
def recipes() -> dict[str, Config]:
    return {name: load_config(resolve_config_path(name)) for name in PUBLISHED}


@pytest.mark.parametrize("recipe, key, value, source", CASES, ids=lambda v: str(v)[:40])
def test_recipe_has_the_published_value(recipes, recipe, key, value, source):
    actual = reduce(getattr, key.split("."), recipes[recipe])
    assert actual == value, f"{recipe}: {key} = {actual!r}, published {value!r} ({source})"


@pytest.mark.parametrize("recipe", sorted(PUBLISHED))
def test_every_block_names_its_published_source(recipe):
    text = (CONFIG_DIR / f"{recipe}.yaml").read_text()
    header = text.split("\n\n")[0].splitlines()[:6]
    assert any("Source:" in line for line in header), f"{recipe}.yaml: no 'Source:' header"
    blocks = [line for line in text.splitlines() if re.match(r"^[a-z]+:", line)]
    assert blocks and all("#" in line for line in blocks), f"{recipe}.yaml: uncommented block"


def _dry_run(recipe: str, expected: Sequence[str]) -> str:
    """`videorl train configs/<recipe>.yaml --dry-run`'s output, which shows each of `expected`."""
    result = CliRunner().invoke(
        app, ["train", str(Path("configs") / f"{recipe}.yaml"), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.output, f"{recipe} --dry-run lacks {text!r}"
    return result.output


@pytest.mark.parametrize(
    "recipe, expected",
    [
        ("orarl", ["lr: 2.0e-06", "top_p: 0.85", "max_new_tokens: 4096", "prompt_style: orarl"]),
        ("taro", ["kl_coef: 0.01", "composition: sum", "prompts_per_step: 16", "epochs: 3"]),
        ("opdvr", ["prompts_per_step: 256", "enable_thinking: false", "n: 1"]),
        ("grpd", ["group_std: true", "n: 8", "val_samples: 16"]),
        (
            "dapo",
            [
                "clip_high: 0.28",
                "ppo (clip 0.2 / 0.28)",
                "overlong 16384..20480 to -1",
                "task: 1536->512, cap 10 (error)",
            ],
        ),
        ("gspo", ["name: gspo", "gspo (clip 0.0003 / 0.0004)", "seq-mean-token-mean"]),
        ("longvt", ["n: 16", "max_turns: 5", "- crop_video", "kl_coef: 0.001", "epochs: 5"]),
        (
            "tgrpo",
            [
                "temporal_contrast:",
                "margin: 0.8",
                "T-GRPO: 4 shuffled-frame",
                "families pooled",
                "time_encoding: processor_default",
            ],
        ),
    ],
)
def test_dry_run_prints_the_published_values(recipe, expected):
    output = _dry_run(recipe, expected)
    assert "3 epochs x batches per epoch" in output or recipe in (
        "orarl",
        "dapo",
        "gspo",
        "tgrpo",
        "longvt",
    )


@pytest.mark.parametrize(
    "recipe, validation, horizon, kl",
    [
        ("orarl", "off (all prompts x 1 samples when on)", "no decay horizon", "off (kl_coef 0)"),
        ("taro", "all prompts x 1 samples, every 50 steps", "no decay horizon", "k3 x 0.01"),
        (
            "opdvr",
            "all prompts x 16 samples, every 22 steps",
            "no decay horizon",
            "off (kl_coef 0)",
        ),
        ("grpd", "all prompts x 16 samples, every 22 steps", "no decay horizon", "off (kl_coef 0)"),
        ("tgrpo", "off (no data.val)", "at step 65000", "k3_unclipped x 0.04"),
        (
            "longvt",
            (
                "all prompts x 1 samples with crop_video (<= 5 model turns), every 5 steps, "
                "and before training"
            ),
            "no decay horizon",
            "k3 x 0.001",
        ),
        (
            "dapo",
            "all prompts x 1 samples, every 5 steps, and before training",
            "no decay horizon",
            "off (kl_coef 0)",
        ),
    ],
)
def test_dry_run_plan_shows_validation_horizon_and_kl(monkeypatch, recipe, validation, horizon, kl):
    """Issue 31: the validation set size, the schedule horizon and the KL form of each recipe."""
    from videorl import cli
    from videorl.config.plan import plan_step

    plan = plan_step(load_config(resolve_config_path(recipe)))
    assert (plan.validation, plan.kl) == (validation, kl)
    assert horizon in plan.lr_schedule
    monkeypatch.setattr(cli.console, "_width", 200)  # one table row per line
    _dry_run(recipe, (validation, horizon, kl))


def test_epochs_set_the_step_count(recipes):
    taro = recipes["taro"]
    assert steps_from_epochs(taro, 7).trainer.steps == 21
    quick = load_config(resolve_config_path("quickstart"))
    assert steps_from_epochs(quick, 7) is quick  # trainer.epochs unset: trainer.steps counts


def test_validation_sampling_per_recipe(recipes):
    orarl = validation_sampling(recipes["orarl"])
    assert (orarl.n, orarl.temperature, orarl.top_p) == (1, 0.7, 0.95)
    taro = validation_sampling(recipes["taro"])
    assert (taro.n, taro.temperature) == (1, 0.0)  # greedy
    assert validation_sampling(recipes["opdvr"]).n == 16
    quick = load_config(resolve_config_path("quickstart"))
    default = validation_sampling(quick)
    assert default.temperature == quick.rollout.temperature
    assert default.n == quick.trainer.val_samples


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def warnings_of_videorl():
    handler, logger = _Warnings(), logging.getLogger("videorl")
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


def test_vllm_falls_back_to_hf_with_one_warning(monkeypatch, warnings_of_videorl, tmp_path):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert rollout_engine("vllm", str(tmp_path)) == "hf"
    (warning,) = warnings_of_videorl
    assert "vLLM is not installed" in warning and "\n" not in warning
    assert rollout_engine("hf", str(tmp_path)) == "hf"


def _vllm_installed(monkeypatch: pytest.MonkeyPatch, architectures: Any) -> None:
    """vLLM looks installed, reporting `architectures` (version, class names) or None."""
    import importlib.util

    from videorl.rollout import vllm_support

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(vllm_support, "installed_architectures", lambda: architectures)


def test_vllm_falls_back_for_a_model_type_without_parity(
    monkeypatch, warnings_of_videorl, tmp_path
):
    _vllm_installed(monkeypatch, None)
    (tmp_path / "config.json").write_text('{"model_type": "llava"}')
    assert rollout_engine("vllm", str(tmp_path)) == "hf"
    assert "'llava' has no parity-tested vLLM path" in warnings_of_videorl[0]
    for model_type in ("qwen2_5_vl", "qwen3_vl", "qwen3_5"):  # tests/vllm covers all three
        (tmp_path / "config.json").write_text(f'{{"model_type": "{model_type}"}}')
        assert rollout_engine("vllm", str(tmp_path)) == "vllm"
    assert len(warnings_of_videorl) == 1


def test_vllm_fallback_names_an_architecture_the_installed_vllm_lacks(
    monkeypatch, warnings_of_videorl, tmp_path
):
    """The recipes' warning names the missing piece: here, Qwen3.5 in an older vLLM."""
    _vllm_installed(monkeypatch, ("0.10.0", frozenset({"Qwen2_5_VLForConditionalGeneration"})))
    config = '{"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"]}'
    (tmp_path / "config.json").write_text(config)
    key = "algorithm.distill.teacher_engine"
    assert rollout_engine("vllm", str(tmp_path), key) == "hf"
    (warning,) = warnings_of_videorl
    assert warning.startswith(f"{key}=vllm: the installed vLLM 0.10.0 has no ")
    assert "Qwen3_5ForConditionalGeneration" in warning and f"set {key}=hf" in warning


def test_bad_validation_sampling_is_a_one_line_error():
    from videorl.errors import ConfigError

    with pytest.raises(ConfigError, match="trainer.val_temperature=-1"):
        load_config(None, ["trainer.val_temperature=-1"])
    with pytest.raises(ConfigError, match="trainer.epochs=0"):
        load_config(None, ["trainer.epochs=0"])
    cfg = load_config(None)
    assert replace(cfg.trainer, epochs=2).epochs == 2


def test_unshuffled_sampler_keeps_file_order():
    from videorl.data.records import record_from_dict
    from videorl.data.sampler import TaskGroupedSampler

    records = [
        record_from_dict({"id": f"m{i}", "family": "math", "problem": "q", "answer": {"text": "1"}})
        for i in range(6)
    ]
    assert TaskGroupedSampler(records, 2, shuffle=False).epoch_batches(1) == [
        [0, 1],
        [2, 3],
        [4, 5],
    ]
    assert TaskGroupedSampler(records, 2).epoch_batches(1) != [[0, 1], [2, 3], [4, 5]]


def test_topk_distillation_is_refused_with_a_clear_error():
    from videorl.errors import ConfigError

    with pytest.raises(
        ConfigError, match=r"algorithm.distill.topk=64: .* set algorithm.distill.topk=0"
    ):
        load_config(resolve_config_path("opdvr"), ["algorithm.distill.topk=64"])
