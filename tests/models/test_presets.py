"""Real-scale presets: the published dimensions build models of the published size (counted on
the meta device, nothing allocated), and a depth-shrunk 3b preset trains a step on a CPU."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from tests.models.test_tiny import fake_video
from videorl.errors import ConfigError
from videorl.models.specs import PRESETS, model_spec
from videorl.models.tiny import make_model, preset_parameters

PUBLISHED = [key for key, spec in PRESETS.items() if spec.published_params]


def test_3b_preset_has_the_published_parameter_count():
    """Qwen2.5-VL-3B-Instruct: 3,754,622,976 parameters (model card), within 2%."""
    count = preset_parameters("qwen2_5_vl", "3b")
    assert count == pytest.approx(3_754_622_976, rel=0.02)


@pytest.mark.parametrize(("arch", "size"), PUBLISHED)
def test_presets_have_their_published_parameter_counts(arch, size):
    count = preset_parameters(arch, size)
    assert count == pytest.approx(PRESETS[(arch, size)].published_params, rel=0.02)


def test_qwen3_5_preset_has_the_hybrid_layout_of_the_release():
    model, _ = make_model("qwen3_5", "4b", device="meta")
    text = model.config.get_text_config()
    assert text.layer_types.count("linear_attention") == 24
    assert text.layer_types[3::4] == ["full_attention"] * 8
    assert (text.hidden_size, text.num_attention_heads, text.num_key_value_heads) == (2560, 16, 4)
    assert (text.head_dim, text.intermediate_size, text.vocab_size) == (256, 9216, 248320)
    assert (text.linear_num_key_heads, text.linear_num_value_heads) == (16, 32)
    assert text.rope_parameters["mrope_section"] == [11, 11, 10]
    vision = model.config.vision_config
    assert (vision.depth, vision.hidden_size, vision.intermediate_size) == (24, 1024, 4096)
    assert model.config.tie_word_embeddings


def test_unknown_sizes_and_bad_depths_name_the_choices():
    with pytest.raises(ConfigError, match="--size '9b' is unknown for qwen3_vl; choose one of"):
        model_spec("qwen3_vl", "9b")
    with pytest.raises(ConfigError, match="--layers 3 must be a multiple of 4"):
        model_spec("qwen3_5", "4b", layers=3)
    shrunk = model_spec("qwen2_5_vl", "3b", layers=2, vision_depth=8)
    assert (shrunk.layers, shrunk.hidden, shrunk.vision_full_attention) == (2, 2048, (7,))


def test_depth_shrunk_3b_preset_trains_a_step_on_cpu():
    """The 3b widths (hidden 2048, 16 heads / 2 KV heads, intermediate 11008, vision 1280 wide)
    with one decoder layer and one vision block, our tokenizer's vocabulary: a video prompt's
    log-probs, backward and an optimizer step change the weights (a full-depth 3B step is
    the GPU check's job)."""
    from videorl.models.inputs import encode_prompt
    from videorl.models.loading import LoadedModel
    from videorl.models.logprobs import rows_logprobs

    model, processor = make_model("qwen2_5_vl", "3b", layers=1, vision_depth=1, small_vocab=True)
    text = model.config.get_text_config()
    assert (text.hidden_size, text.intermediate_size, text.num_key_value_heads) == (2048, 11008, 2)
    loaded = LoadedModel(model, processor.tokenizer, processor, "qwen2_5_vl")
    loaded.tokenizer.padding_side = "left"
    prompt = encode_prompt(loaded, "When does it start?", video=fake_video(4, size=56))
    response = torch.tensor([40, 41, 42, 43])
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    before = model.lm_head.weight.detach().clone()
    logp, _, mask = rows_logprobs(loaded, [prompt], [response], temperature=1.0)
    (-(logp * mask).sum()).backward()
    optimizer.step()
    assert torch.isfinite(logp).all() and mask.sum() == 4
    assert not torch.equal(model.lm_head.weight, before)


def test_make_tiny_cli_refuses_bad_options(tmp_path):
    from videorl.cli import app

    runner = CliRunner()
    done = runner.invoke(app, ["make-tiny", str(tmp_path / "m"), "--arch", "qwen3", "--size", "x"])
    assert done.exit_code != 0 and "--size 'x' is unknown for qwen3" in str(done.exception)
    done = runner.invoke(app, ["make-tiny", str(tmp_path / "m"), "--dtype", "int8"])
    assert "--dtype 'int8' is unknown" in str(done.exception)
    if not torch.cuda.is_available():
        done = runner.invoke(app, ["make-tiny", str(tmp_path / "m"), "--device", "cuda"])
        assert "no CUDA GPU here; use --device cpu" in str(done.exception)
    done = runner.invoke(
        app, ["make-tiny", str(tmp_path / "m"), "--arch", "qwen3"], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    assert "wrote qwen3 (tiny, " in done.output and (tmp_path / "m" / "config.json").is_file()
