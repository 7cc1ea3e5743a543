"""LoRA through peft: adapters train and the base does not, the policy-gradient loss goes
down, the reference is the base with adapters off, and merged folders equal base + adapter."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from tests.trainer.dist_update_worker import fixed_batch
from videorl.algorithms.loss import PolicyLossConfig
from videorl.cli import app
from videorl.config import OptimConfig, load_config
from videorl.errors import ConfigError
from videorl.models.loading import load_model, read_model_type
from videorl.models.logprobs import rows_logprobs
from videorl.models.lora import LoraSettings, apply_lora, merged_state_dict, reference_view
from videorl.trainer.update import UpdateContext, update_policy

pytest.importorskip("peft")
LORA = LoraSettings(rank=4, alpha=8.0)


def _base_weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.named_parameters() if "lora_" not in k}


def _objective(loaded, batch) -> float:
    """-sum_t A_t log p(y_t) / tokens: the policy-gradient loss at ratio 1."""
    with torch.no_grad():
        logp, _, mask = rows_logprobs(loaded, batch.row_prompts(), batch.responses, temperature=1.0)
    width = mask.shape[1]
    return float(-(batch.advantages[:, :width] * logp * mask).sum() / mask.sum())


def test_adapters_train_base_stays_and_loss_goes_down(tiny_model_dir):
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    batch = fixed_batch(loaded)
    loaded.model = apply_lora(loaded.model, LORA, base=tiny_model_dir("qwen2_5_vl"))
    trainable = [n for n, p in loaded.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert not any("visual" in n for n in trainable)  # the vision tower is not adapted
    before, start = _base_weights(loaded.model), _objective(loaded, batch)
    params = [p for p in loaded.model.parameters() if p.requires_grad]
    ctx = UpdateContext(
        policy=loaded,
        optimizer=torch.optim.AdamW(params, lr=1e-2),
        optim=OptimConfig(lr=1e-2, epochs=2),
        loss=PolicyLossConfig(kl_coef=0.1),
        temperature=1.0,
        reference=reference_view(loaded),
    )
    for _ in range(2):
        metrics = update_policy(ctx, batch)
    assert metrics["actor/skipped_nonfinite_steps"] == 0
    assert _objective(loaded, batch) < start - 1e-3
    after = _base_weights(loaded.model)
    assert all(torch.equal(before[k], after[k]) for k in before)
    base_again = load_model(tiny_model_dir("qwen2_5_vl"))
    reference = _objective(reference_view(loaded), batch)
    assert reference == pytest.approx(_objective(base_again, batch), abs=1e-5)


def test_merged_state_dict_equals_merge_and_unload(tiny_model_dir):
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    model = apply_lora(loaded.model, LORA, base=tiny_model_dir("qwen2_5_vl"))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.1)  # a trained-looking adapter
    merged = merged_state_dict(model)
    reference = model.merge_and_unload().state_dict()  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
    assert merged.keys() == reference.keys()
    assert all(torch.allclose(merged[k], reference[k], atol=1e-6) for k in reference)


def test_config_validation():
    with pytest.raises(ConfigError, match="model.lora.rank=-1"):
        load_config(None, ["model.lora.rank=-1"])
    with pytest.raises(ConfigError, match="model.lora.dropout=1.5"):
        load_config(None, ["model.lora.dropout=1.5"])
    assert load_config(None, ["model.lora.rank=8"]).model.lora.enabled


def test_lora_run_saves_adapters_and_merge_equals_base_plus_adapter(make_config, tmp_path):
    cfg, _ = make_config(
        "grpo",
        "model.lora.rank=4",
        "model.lora.alpha=8",
        "algorithm.loss.kl_coef=0.05",
        "trainer.steps=2",
        "trainer.save_every=1",
        "optim.lr=5e-2",
    )
    from safetensors.torch import load_file

    from videorl.trainer.loop import run_training

    final = run_training(cfg)
    assert (final / "adapter_config.json").is_file() and not (final / "config.json").exists()
    step = final.parent / "step-000002" / "model" / "adapter_model.safetensors"
    assert json.loads((final / "adapter_config.json").read_text())["r"] == 4
    assert read_model_type(final) == "qwen2_5_vl"  # an adapter folder resolves to its base
    metrics = [json.loads(line) for line in (final.parent / "metrics.jsonl").open()]
    assert all(m["actor/skipped_nonfinite_steps"] == 0 for m in metrics)
    trained = load_file(step)
    assert any(t.abs().sum() > 0 for k, t in trained.items() if "lora_B" in k)  # it learned
    run_training(cfg, resume=str(final.parent / "step-000001"))  # adapters + optimizer restored
    resumed = load_file(step)
    assert trained.keys() == resumed.keys()
    assert all(torch.allclose(trained[k], resumed[k], atol=1e-6) for k in trained)

    merged_dir = tmp_path / "merged"
    result = CliRunner().invoke(app, ["merge", str(final), str(merged_dir)])
    assert result.exit_code == 0, result.output
    assert (merged_dir / "config.json").is_file() and (merged_dir / "model.safetensors").is_file()
    assert not (merged_dir / "adapter_config.json").exists()

    from transformers import AutoModelForImageTextToText

    plain = AutoModelForImageTextToText.from_pretrained(merged_dir)  # plain transformers
    adapted, base = load_model(final), load_model(cfg.model.path)
    ids = torch.tensor([[1, 5, 9, 17, 33, 2]])
    with torch.no_grad():
        out_plain = plain(input_ids=ids).logits
        out_adapted = adapted.model(input_ids=ids).logits
        out_base = base.model(input_ids=ids).logits
    assert torch.allclose(out_plain, out_adapted, atol=1e-5)
    assert not torch.allclose(out_plain, out_base, atol=1e-4)  # the adapter changed something
