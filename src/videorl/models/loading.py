"""Load policy, reference and teacher models with their processors, like real checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from videorl.errors import ConfigError
from videorl.hub import looks_local
from videorl.models import varlen_attention
from videorl.models.loaded import LoadedModel
from videorl.models.lora import merge_adapter, read_adapter_config
from videorl.models.mrope import use_reference_rope_index
from videorl.models.packing import resolve_packing
from videorl.quickstart import next_command

VISION_MODEL_TYPES = (
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_5",
    "qwen2_vl",
    "qwen3_vl_moe",
    "qwen3_5_moe",
)


def split_revision(path: str | Path, revision: str | None = None) -> tuple[str, str | None]:
    """`org/name@rev` -> (`org/name`, `rev`) for a Hub id; a local folder is kept whole.

    An explicit `revision` wins over one written in the id.
    """
    text = str(path)
    if Path(text).exists() or "@" not in text:
        return text, revision
    repo_id, _, written = text.rpartition("@")
    return repo_id, revision or written or None


def _hub_error(repo_id: str, revision: str | None, err: Exception) -> ConfigError:
    """One line naming the id and how to get it, by the Hub error behind transformers' OSError."""
    from huggingface_hub import errors as hub_errors

    causes = (err, err.__cause__)

    def caused_by(kind: type) -> bool:
        return any(isinstance(cause, kind) for cause in causes)

    at = f" (revision {revision})" if revision else ""
    download = f"hf download {repo_id}" + (f" --revision {revision}" if revision else "")
    if caused_by(hub_errors.GatedRepoError):
        fix = f"accept its license on the Hub and log in (`hf auth login` or HF_TOKEN), then `{download}`"
    elif caused_by(hub_errors.RevisionNotFoundError):
        fix = "check model.revision (a branch, tag or commit of that repo)"
    elif caused_by(hub_errors.RepositoryNotFoundError):
        fix = "check the id, or log in (`hf auth login` or HF_TOKEN) for a private model"
    else:  # offline (HF_HUB_OFFLINE=1) or no network, and not in the cache
        fix = (
            f"pre-download it with `{download}` (into HF_HOME, default ~/.cache/huggingface), "
            "or give a local model folder (`videorl make-tiny OUT` builds one offline)"
        )
    return ConfigError(
        f"model {repo_id!r}{at} is not a local model folder and could not be loaded from "
        f"the Hugging Face Hub or its cache; {fix}"
    )


def resolve_model_file(
    path: str | Path, filename: str = "config.json", revision: str | None = None
) -> Path:
    """The local file `filename` of a model folder or Hub id, through transformers' own
    resolution (cache under HF_HOME, HF_HUB_OFFLINE, HF_TOKEN; downloads when online)."""
    repo_id, revision = split_revision(path, revision)
    folder = Path(repo_id)
    if folder.is_dir():
        adapter = read_adapter_config(folder)
        if adapter is not None and not (folder / filename).is_file():  # a LoRA adapter folder
            return resolve_model_file(
                _adapter_base(folder, adapter), filename, adapter.get("revision")
            )
        if not (folder / filename).is_file():
            raise ConfigError(
                f"model path {repo_id!r} has no {filename}; give a Hugging Face model folder "
                "(build one offline with `videorl make-tiny --arch qwen2_5_vl OUT`)"
            )
        return folder / filename
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    fix = next_command(repo_id) or (
        "; fix the path, or build a model offline with `videorl make-tiny OUT`"
    )
    if looks_local(repo_id):  # checked here at once: no Hub lookups and retries for a typo
        what = "is a file, not a model folder" if folder.exists() else "does not exist"
        raise ConfigError(f"model path {repo_id!r} {what}{fix}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise ConfigError(
            f"model path {repo_id!r} is neither a local folder nor a Hugging Face Hub id "
            f"(org/name){fix}"
        ) from None
    from transformers.utils import cached_file

    try:
        resolved = cached_file(repo_id, filename, revision=revision)
    except OSError as err:
        raise _hub_error(repo_id, revision, err) from None
    if resolved is None:  # transformers' answer for a file the repo does not hold
        at = f" (revision {revision})" if revision else ""
        raise ConfigError(
            f"model {repo_id!r}{at} on the Hugging Face Hub has no {filename}: it is not a "
            f"full model (an adapter-only repo?); give a full model's id, or `hf download "
            f"{repo_id}` and give that local folder (an adapter folder loads its base model)"
        )
    return Path(resolved)


def model_folder(path: str | Path, revision: str | None = None) -> Path:
    """The local folder holding a model (a Hub id resolves to its cached snapshot)."""
    return resolve_model_file(path, "config.json", revision).parent


def local_snapshot(path: str | Path, revision: str | None = None) -> Path:
    """A whole local model folder for engines that read files themselves (vLLM): a local
    folder as is, a Hub id as its snapshot in the HF cache (downloaded when online)."""
    repo_id, revision = split_revision(path, revision)
    folder = model_folder(repo_id, revision)  # a one-line error for a bad path or missing id
    if Path(repo_id).is_dir():
        return folder
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, revision=revision))
    except OSError as err:
        raise _hub_error(repo_id, revision, err) from None


def read_model_type(path: str | Path, revision: str | None = None) -> str:
    return json.loads(resolve_model_file(path, "config.json", revision).read_text())["model_type"]


def load_model(
    path: str | Path,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    attn_implementation: str = "sdpa",
    packing: str | bool = False,
    revision: str | None = None,
) -> LoadedModel:
    """Load a causal LM or vision-language model and its tokenizer/processor from `path`:
    a local folder or a Hugging Face Hub id (`org/name`, `org/name@revision`), resolved by
    transformers (HF_HOME cache, HF_HUB_OFFLINE, HF_TOKEN).

    `packing` ("auto", True, False) decides whether log-prob and training forwards pack rows
    without padding (see `models/packing.py`).
    """
    adapter = read_adapter_config(path) if Path(str(path)).is_dir() else None
    if adapter is not None and not (Path(str(path)) / "config.json").is_file():
        return _load_adapter_folder(
            Path(str(path)),
            adapter,
            dtype=dtype,
            device=device,
            attn_implementation=attn_implementation,
            packing=packing,
        )
    model_type = read_model_type(path, revision)
    path, revision = split_revision(path, revision)
    model_class, processor, tokenizer = _model_class_and_processor(model_type, path, revision)
    model = _from_pretrained(model_class, path, revision, dtype, attn_implementation)
    use_reference_rope_index(model)
    try:
        packed = resolve_packing(model, packing)
    except ValueError as err:
        raise ConfigError(
            f"model.packing=true is not possible for {path}: {err}; set model.packing to auto or false"
        ) from err
    tokenizer.padding_side = "left"
    return LoadedModel(
        model=model.to(device),
        tokenizer=tokenizer,
        processor=processor,
        model_type=model_type,
        packing=packed,
    )


def _model_class_and_processor(
    model_type: str, path: str | Path, revision: str | None
) -> tuple[Any, Any, Any]:
    """(the Auto model class, the processor or None, the tokenizer) of a model type: a
    vision-language model reads its processor, a text model only its tokenizer."""
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
        AutoProcessor,
        AutoTokenizer,
    )

    if model_type in VISION_MODEL_TYPES:
        processor = AutoProcessor.from_pretrained(path, revision=revision)
        return AutoModelForImageTextToText, processor, processor.tokenizer
    return AutoModelForCausalLM, None, AutoTokenizer.from_pretrained(path, revision=revision)


def _from_pretrained(
    model_class: Any,
    path: str | Path,
    revision: str | None,
    dtype: torch.dtype,
    attn_implementation: str,
) -> Any:
    """The model's weights with the attention kernel asked for; a kernel that cannot run
    here is a one-line error naming `model.attn_implementation` and the fix."""
    if attn_implementation == varlen_attention.NAME:
        varlen_attention.register()
    try:
        return model_class.from_pretrained(
            path, revision=revision, dtype=dtype, attn_implementation=attn_implementation
        )
    except (ImportError, ValueError) as err:
        if attn_implementation == "sdpa":
            raise
        raise ConfigError(
            f"model.attn_implementation={attn_implementation!r} cannot be used here ({err}); "
            "use sdpa or sdpa_varlen (any device) or install its kernels (flash_attention_2 "
            "needs the flash-attn package and a CUDA GPU)"
        ) from err


def _adapter_base(folder: Path, adapter: dict[str, Any]) -> str:
    base = adapter.get("base_model_name_or_path")
    if not base:
        raise ConfigError(
            f"adapter folder {str(folder)!r} names no base model (base_model_name_or_path in "
            "adapter_config.json); set it to the model the adapter was trained on"
        )
    return str(base)


def _load_adapter_folder(folder: Path, adapter: dict[str, Any], **kwargs: Any) -> LoadedModel:
    """A LoRA adapter folder (what a `model.lora` run saves): its base model with the
    adapter merged in, and the processor saved beside the adapter."""
    from transformers import AutoProcessor, AutoTokenizer

    base = _adapter_base(folder, adapter)
    device = kwargs.pop("device")
    loaded = load_model(base, revision=adapter.get("revision"), device="cpu", **kwargs)
    model = merge_adapter(loaded.model, folder)
    processor, tokenizer = loaded.processor, loaded.tokenizer
    if (folder / "tokenizer_config.json").is_file():
        if processor is not None:
            processor = AutoProcessor.from_pretrained(folder)
            tokenizer = processor.tokenizer
        else:
            tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.padding_side = "left"
    return LoadedModel(
        model=model.to(device),
        tokenizer=tokenizer,
        processor=processor,
        model_type=loaded.model_type,
        packing=loaded.packing,
    )


def check_same_tokenizer(student: LoadedModel, teacher: LoadedModel) -> None:
    """Distillation compares token log-probs, so both models must share one vocabulary."""
    a, b = student.tokenizer.get_vocab(), teacher.tokenizer.get_vocab()
    if a != b:
        only_a = len(set(a) - set(b))
        only_b = len(set(b) - set(a))
        raise ConfigError(
            f"teacher tokenizer differs from the student's ({len(a)} vs {len(b)} tokens; "
            f"{only_a} only in the student, {only_b} only in the teacher): on-policy "
            "distillation needs a teacher with the same tokenizer; choose a teacher of the same family"
        )
