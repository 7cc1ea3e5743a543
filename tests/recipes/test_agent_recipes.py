"""configs/paravt.yaml and configs/framethinker.yaml resolve with their published values
(docs/fidelity.md#paravt-configsparavtyaml, #framethinker-configsframethinkeryaml)."""

from __future__ import annotations

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.rollout.tools.runner import resolve_tools


def test_paravt_resolves_with_its_published_values():
    cfg = load_config(resolve_config_path("paravt"))
    assert cfg.data.frame_budgets == (4, 8, 16, 32, 64)
    assert (cfg.rollout.n, cfg.rollout.temperature, cfg.rollout.max_new_tokens) == (8, 0.7, 2048)
    assert (cfg.optim.lr, cfg.optim.weight_decay, cfg.algorithm.loss.kl_coef) == (2e-6, 0.01, 0.01)
    assert cfg.reward.plugins == {"video_qa": "videorl.rewards.paravt:score"}
    assert [t.name for t in resolve_tools(cfg.rollout.tools, cfg.rollout.tool_modules)] == [
        "crop_video"
    ]
    assert cfg.rollout.subagents == ("crop_video",) and cfg.rollout.subagent_max_new_tokens is None
    assert not cfg.rollout.include_subagent_in_loss  # trainer.py: sub-agent tokens not trained


def test_framethinker_resolves_with_its_published_values():
    cfg = load_config(resolve_config_path("framethinker"))
    assert cfg.algorithm.turn_rewards and cfg.algorithm.estimator == "grpo"
    assert (cfg.rollout.n, cfg.rollout.max_turns, cfg.optim.lr) == (8, 5, 5e-7)
    assert cfg.data.prompts_per_step == 32
    names = [t.name for t in resolve_tools(cfg.rollout.tools, cfg.rollout.tool_modules)]
    assert names == ["select_frames", "get_frame_number"]
