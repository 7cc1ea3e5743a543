"""`models/kv_cache.py`: the KV cache's name is the one the installed transformers uses, in
the model's forward, in `generate`'s model inputs and in the model output."""

from __future__ import annotations

import inspect

import torch

from videorl.models.kv_cache import cache_argument, output_cache
from videorl.models.loading import load_model


def test_the_cache_name_is_the_installed_transformers_one(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    name = cache_argument()
    assert name in inspect.signature(type(loaded.model).forward).parameters
    backbone = loaded.model.model
    assert name in inspect.signature(backbone.compute_3d_position_ids).parameters  # type: ignore[arg-type]  # nn.Module types attributes as Tensor | Module
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        output = loaded.model(input_ids=ids, use_cache=True)
        cache = output_cache(output)
        assert cache.get_seq_length() == 3
        more = loaded.model(input_ids=torch.tensor([[4]]), use_cache=True, **{name: cache})
    assert output_cache(more).get_seq_length() == 4
