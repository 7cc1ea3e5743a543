"""LoRA adapters through `peft`: the policy trains low-rank updates of frozen weights.

A LoRA layer computes `W x + (alpha / rank) * B A x` with `A` [rank x in] and `B`
[out x rank] (B starts at zero, so training starts from the base model exactly). Only A and B
train; the base weights never change. The KL reference is the same module with the
adapters switched off (`disable_adapter()`): no second copy of the weights.

A LoRA run saves adapter folders (`adapter_config.json` + `adapter_model.safetensors` + the
processor); `load_model` loads one as base + adapter merged, and `videorl merge` writes the
merged weights as a full Hugging Face folder.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import torch

from videorl.config.constraints import Between, Checked, Ge, Gt
from videorl.errors import ConfigError

ADAPTER_CONFIG = "adapter_config.json"
# Attention and MLP projections of the Qwen/Llama-style decoder.
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LoraSettings(Checked, section="model.lora"):
    """`model.lora.*`: rank 0 trains all (unfrozen) weights; rank > 0 trains LoRA adapters
    of `target_modules` (module-name suffixes) in the language model."""

    rank: Annotated[int, Ge(0)] = 0
    """LoRA rank r; 0 = no adapters, full fine-tuning."""
    alpha: Annotated[float, Gt(0)] = 16.0
    """LoRA scaling alpha; adapters are scaled by alpha / rank."""
    dropout: Annotated[float, Between(0, 1, high_open=True)] = 0.0
    """Dropout on the adapters' input."""
    target_modules: tuple[str, ...] = DEFAULT_TARGETS
    """Module-name suffixes of the language-model layers that get adapters (non-empty when rank >
    0)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rank and not self.target_modules:
            raise ConfigError(
                "model.lora.target_modules is empty; name the layers to adapt, e.g. [q_proj, v_proj]"
            )

    @property
    def enabled(self) -> bool:
        return self.rank > 0


def is_peft(model: torch.nn.Module) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def apply_lora(
    model: torch.nn.Module,
    settings: LoraSettings,
    *,
    base: str,
    revision: str | None = None,
    adapt_vision: bool = False,
) -> torch.nn.Module:
    """Wrap `model` in a PEFT model with fresh adapters (base weights frozen). `base` is
    written into the adapter config so the adapter folder names the model it adapts."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise ConfigError(
            "model.lora needs the peft package; install it with pip install 'peft>=0.17'"
        ) from None
    local = Path(base)
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,  # type: ignore[arg-type]  # peft says int; it takes floats
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        exclude_modules=None if adapt_vision else r".*visual.*",
        base_model_name_or_path=str(local.resolve()) if local.is_dir() else base,
        revision=revision,
    )
    try:
        wrapped = get_peft_model(model, config)
    except ValueError as err:
        raise ConfigError(
            f"model.lora.target_modules={list(settings.target_modules)} matches no layer of "
            f"the model ({str(err).splitlines()[0][:160]}); use names such as q_proj, v_proj"
        ) from None
    wrapped.peft_config["default"].base_model_name_or_path = config.base_model_name_or_path
    return wrapped


class AdaptersOff(torch.nn.Module):
    """The base model inside a PEFT model: each forward runs with the adapters disabled.

    It holds the PEFT model without registering it (no second copy, no double-counted
    parameters); attribute reads fall through to it (config, generation config, ...).
    """

    def __init__(self, peft_model: torch.nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "peft_model", peft_model)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with torch.no_grad(), self.peft_model.disable_adapter():
            return self.peft_model(*args, **kwargs)

    def parameters(
        self, recurse: bool = True
    ) -> Iterator[torch.nn.Parameter]:  # the device / dtype of the shared weights
        return self.peft_model.parameters(recurse)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(object.__getattribute__(self, "peft_model"), name)


def reference_view(loaded: Any) -> Any:
    """A `LoadedModel` of the policy's base weights (adapters off), for the KL reference."""
    return dataclasses.replace(loaded, model=AdaptersOff(loaded.model))


def merged_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The base model's state dict with every adapter merged in (`W + scale * B A`),
    computed without touching the live weights (for engines that load plain weights)."""
    from peft.tuners.lora import LoraLayer

    peft_model: Any = model  # a peft model: methods nn.Module does not declare
    base = peft_model.get_base_model()
    state: dict[str, torch.Tensor] = {}
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer):
            layer: Any = module.get_base_layer()  # an nn.Linear-like layer: weight, bias
            weight = layer.weight.detach()
            for adapter in module.active_adapters:
                if adapter in module.lora_A:
                    # peft declares get_delta_weight on LoraLayer's subclasses (Linear, ...)
                    delta = module.get_delta_weight(adapter)  # type: ignore[attr-defined]
                    weight = weight + delta.to(weight.dtype)
            state[f"{name}.weight"] = weight
            if getattr(layer, "bias", None) is not None:
                state[f"{name}.bias"] = layer.bias.detach()
    for key, value in base.state_dict().items():
        if "lora_" in key or ".base_layer." in key:
            continue
        state.setdefault(key, value)
    return state


def read_adapter_config(folder: str | Path) -> dict[str, Any] | None:
    """The adapter config of an adapter folder, else None."""
    path = Path(folder) / ADAPTER_CONFIG
    return json.loads(path.read_text()) if path.is_file() else None


def merge_adapter(model: torch.nn.Module, folder: str | Path) -> torch.nn.Module:
    """Load the adapter in `folder` onto `model` and merge it: a plain transformers model."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
