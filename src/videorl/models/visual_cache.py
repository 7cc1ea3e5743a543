"""Encode each video once per step: the vision tower's output per distinct prompt video, reused.

A step runs the same prompt video through the model many times: generation, the old-,
reference-, teacher- and sensitivity log-prob passes and the update forward, each in
several micro-batches. With a frozen vision tower (`model.freeze_vision`) every one of
those encodings is the same function of the same pixels, so `VisualEmbeddingCache` encodes
each distinct video (and image) once and the forwards take the stored embeddings through
transformers' `mm_encoder_outputs` (what `generate` itself uses to encode a prompt once)
instead of `pixel_values[_videos]`. The vision tower output is

    E(v) = visual(pixel_values(v), grid_thw(v))   (pooled tokens + Qwen3-VL deepstack features)

and a forward given `E(v)` equals one given the pixels up to float reduction order. Keys
are the prompt's pixel tensor (`PromptEncoding.vision`, shared by its n rows and all
passes); frames shuffled for the sensitivity reward are other prompts, so they are encoded
once each too. Entries are held for one step (`clear`). A trainable tower is recomputed
(with gradients) wherever gradients are enabled, i.e. in the update forward; no-grad passes
still share one encoding, taken before the step's first optimizer step. With sequence
parallelism (`split_over`) the ranks of a group encode each missing item once between them,
each rank a share of its frames.

Multi-turn contexts (`rollout/multiturn.py`) grow by tool turns whose clips, frames and crops
are concatenated to the prompt's pixels: `note_parts` records that a merged pixel tensor is
its parts in order, and the cache stores and looks up each part (a *leaf*: a tensor no merge
made) once, so each turn's generation and every forward of the trajectory encode only the
items not seen yet, and a merged tensor's embeddings are its parts' in order
(`tools/vision_encodes_per_row`, docs/tools.md).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch
import torch.distributed as dist

from videorl.models.inputs import PromptEncoding
from videorl.models.split_vision import split_vision, vision_tower

if TYPE_CHECKING:
    from videorl.models.loading import LoadedModel

# modality -> (pixel key, grid key, `get_*_features` of the backbone)
MODALITIES = {
    "image": ("pixel_values", "image_grid_thw", "get_image_features"),
    "video": ("pixel_values_videos", "video_grid_thw", "get_video_features"),
}


# id(merged pixels) -> (a weak reference to it, its parts in order: (pixels, grid_thw) each)
_PARTS: dict[int, tuple[weakref.ref, tuple[tuple[torch.Tensor, torch.Tensor], ...]]] = {}
Leaf = tuple[torch.Tensor, torch.Tensor]  # (pixels, grid_thw) of items no merge made


def note_parts(merged: torch.Tensor, parts: Sequence[Leaf]) -> None:
    """Record that the pixel tensor `merged` is the row-wise concatenation of `parts`, kept
    as their leaves: an earlier merge is not held alive by a later one (a trajectory keeps
    its prompt's pixels and each tool item's once, not every turn's context)."""
    key = id(merged)
    flat = tuple(leaf for part in parts for leaf in leaves(*part))
    _PARTS[key] = (weakref.ref(merged, lambda _: _PARTS.pop(key, None)), flat)


def note_merges(
    before: Mapping[str, torch.Tensor],
    added: Mapping[str, torch.Tensor],
    merged: Mapping[str, torch.Tensor],
) -> None:
    """Record the parts of each pixel tensor of `merged` that concatenates `before`'s and
    `added`'s (a multi-turn context extended by a tool turn's media)."""
    for pixel_key, grid_key, _ in MODALITIES.values():
        if pixel_key in before and pixel_key in added:
            parts = ((before[pixel_key], before[grid_key]), (added[pixel_key], added[grid_key]))
            note_parts(merged[pixel_key], parts)


def leaves(pixels: torch.Tensor, grids: torch.Tensor) -> list[Leaf]:
    """The unmerged parts of `pixels` in order (itself when no merge made it)."""
    found = _PARTS.get(id(pixels))
    if found is None or found[0]() is not pixels:
        return [(pixels, grids)]
    return [leaf for part in found[1] for leaf in leaves(*part)]


def _prompt_leaves(modality: str, prompt: PromptEncoding) -> list[Leaf]:
    pixel_key, grid_key, _ = MODALITIES[modality]
    return leaves(prompt.vision[pixel_key], prompt.vision[grid_key])


@dataclass
class _Encoded:
    """The tower's output for one prompt's items (videos or images), one tensor per item."""

    pixels: torch.Tensor  # the key, kept alive so that its id is not reused
    pooled: list[torch.Tensor]
    deepstack: list[list[torch.Tensor]] | None  # [layer][item]


@dataclass(frozen=True)
class ExportedEmbeddings:
    """A cache's entries for a list of prompts (per prompt: modality -> pooled, deepstack)
    and the tower's output types, as `VisualEmbeddingCache.export` gives them."""

    entries: list[dict[str, tuple[list[torch.Tensor], list[list[torch.Tensor]] | None]]]
    output_types: dict[str, type]


def tower_trainable(model: torch.nn.Module) -> bool:
    tower = vision_tower(model)
    return tower is not None and any(p.requires_grad for p in tower.parameters())


class VisualEmbeddingCache:
    """Per-step store of `encoder`'s vision-tower outputs, by prompt pixel tensor."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        self.encoder = encoder  # under FSDP: the unsharded rollout copy (same frozen tower)
        self._store: dict[tuple[str, int], _Encoded] = {}
        self._output_types: dict[str, type] = {}
        self.encoded_items = 0  # videos + images run through the tower since construction
        self.group: dist.ProcessGroup | None = None  # set by `split_over`

    @contextlib.contextmanager
    def split_over(self, group: dist.ProcessGroup) -> Iterator[None]:
        """Within the block the ranks of the sequence-parallel `group` (same prompts on
        every rank) encode each missing item once across the group: they agree on which
        items are missing (an item one rank stored alone is encoded again on all) and the
        encoder's tower encodes each rank's share of the frames (`models/split_vision.py`)."""
        previous, self.group = self.group, group
        try:
            with split_vision(self.encoder, group):
                yield
        finally:
            self.group = previous

    def clear(self) -> None:
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)

    def retain(self, prompts: Sequence[PromptEncoding]) -> None:
        """Keep only the entries of `prompts` (dynamic sampling: the groups a draw keeps; the
        dropped prompts' pixels and embeddings are freed before the next draw)."""
        keep = {
            (modality, id(pixels))
            for p in prompts
            for modality, (key, _, _) in MODALITIES.items()
            if key in p.vision
            for pixels, _ in _prompt_leaves(modality, p)
        }
        for entry in [k for k in self._store if k not in keep]:
            del self._store[entry]

    @torch.no_grad()
    def _encode(self, modality: str, parts: Sequence[Leaf]) -> None:
        """Encode the leaves' items of `modality` in one tower call and store them."""
        method = MODALITIES[modality][2]
        device = next(self.encoder.parameters()).device
        pixels = torch.cat([leaf for leaf, _ in parts]).to(device)
        grids = torch.cat([grid for _, grid in parts]).to(device)
        backbone = getattr(self.encoder, "model", self.encoder)
        was_training = self.encoder.training
        self.encoder.eval()
        out = getattr(backbone, method)(pixels, grids, return_dict=True)
        self.encoder.train(was_training)
        self._output_types[modality] = type(out)
        deepstack = getattr(out, "deepstack_features", None)
        start = 0
        for leaf, grid in parts:
            count = int(grid.shape[0])
            items = slice(start, start + count)
            self._store[(modality, id(leaf))] = _Encoded(
                pixels=leaf,
                pooled=list(out.pooler_output[items]),
                deepstack=None if deepstack is None else [list(f[items]) for f in deepstack],
            )
            start += count
        self.encoded_items += start

    def export(self, prompts: Sequence[PromptEncoding]) -> ExportedEmbeddings:
        """The stored embeddings of `prompts`, per prompt and modality, to hand to another
        process's cache (async rollouts: the worker encoded them with the same frozen tower)."""
        entries: list[dict[str, tuple[list[torch.Tensor], list[list[torch.Tensor]] | None]]] = []
        for prompt in prompts:
            found = {}
            for modality, (pixel_key, _, _) in MODALITIES.items():
                if pixel_key in prompt.vision and (e := self._lookup_prompt(modality, prompt)):
                    found[modality] = (e.pooled, e.deepstack)
            entries.append(found)
        return ExportedEmbeddings(entries, dict(self._output_types))

    def adopt(self, prompts: Sequence[PromptEncoding], exported: ExportedEmbeddings) -> None:
        """Store `exported` (from `export` over the same prompts) as these prompts' entries."""
        self._output_types.update(exported.output_types)
        for prompt, found in zip(prompts, exported.entries, strict=True):
            for modality, (pooled, deepstack) in found.items():
                pixels = prompt.vision[MODALITIES[modality][0]]
                self._store[(modality, id(pixels))] = _Encoded(pixels, pooled, deepstack)

    def _lookup(self, modality: str, pixels: torch.Tensor) -> _Encoded | None:
        entry = self._store.get((modality, id(pixels)))
        return entry if entry is not None and entry.pixels is pixels else None

    def _lookup_prompt(self, modality: str, prompt: PromptEncoding) -> _Encoded | None:
        """The prompt's items' embeddings (its leaves' in order), if every leaf is stored."""
        found = [self._lookup(modality, pixels) for pixels, _ in _prompt_leaves(modality, prompt)]
        if any(e is None for e in found):
            return None
        entries = cast("list[_Encoded]", found)
        if len(entries) == 1:
            return entries[0]
        stacks = [e.deepstack for e in entries]
        return _Encoded(
            pixels=prompt.vision[MODALITIES[modality][0]],
            pooled=[t for e in entries for t in e.pooled],
            deepstack=None
            if any(d is None for d in stacks)
            else [
                [t for d in cast("list[list[list[torch.Tensor]]]", stacks) for t in d[layer]]
                for layer in range(len(cast("list[list[torch.Tensor]]", stacks[0])))
            ],
        )

    def _missing(self, modality: str, parts: Sequence[Leaf]) -> list[Leaf]:
        """The distinct leaves of `parts` to encode: those not stored, on any rank of
        `self.group` (the same rows on every rank)."""
        distinct = list({id(pixels): (pixels, grid) for pixels, grid in parts}.values())
        missing = [self._lookup(modality, pixels) is None for pixels, _ in distinct]
        if self.group is not None:
            device = next(self.encoder.parameters()).device
            flags = torch.tensor(missing, dtype=torch.uint8, device=device)
            dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.group)
            missing = flags.bool().tolist()
        return [p for p, absent in zip(distinct, missing, strict=True) if absent]

    def encoder_outputs(self, prompts: Sequence[PromptEncoding]) -> dict[str, Any]:
        """`mm_encoder_outputs` for rows `prompts` (items in row order, as `collate` lays out
        the pixels), encoding the leaves not seen yet in one batch per modality."""
        outputs: dict[str, Any] = {}
        for modality, (pixel_key, _, _) in MODALITIES.items():
            rows = [p for p in prompts if pixel_key in p.vision]
            if not rows:
                continue
            parts = [leaf for p in rows for leaf in _prompt_leaves(modality, p)]
            missing = self._missing(modality, parts)
            if missing:
                self._encode(modality, missing)
            # every leaf is stored now: encoded above, or before (_missing found it)
            entries = [cast(_Encoded, self._lookup(modality, pixels)) for pixels, _ in parts]
            pooled = tuple(t for e in entries for t in e.pooled)
            fields: dict[str, Any] = {"pooler_output": pooled}
            if entries[0].deepstack is not None:
                layers = len(entries[0].deepstack)
                # one tower encoded every entry: each has deepstack features when the first does
                stacks = [cast("list[list[torch.Tensor]]", e.deepstack) for e in entries]
                fields["deepstack_features"] = [
                    tuple(t for stack in stacks for t in stack[layer]) for layer in range(layers)
                ]
            outputs[modality] = self._output_types[modality](**fields)
        return outputs


def cached_encoder_outputs(
    loaded: LoadedModel, prompts: Sequence[PromptEncoding]
) -> dict[str, Any] | None:
    """The rows' stored vision embeddings, or None to let the forward run the tower itself:
    no cache, no vision input, or a trainable tower under gradients."""
    cache = getattr(loaded, "visual_cache", None)
    if cache is None or not any(
        key in p.vision for p in prompts for key, _, _ in MODALITIES.values()
    ):
        return None
    if torch.is_grad_enabled() and tower_trainable(loaded.model):
        return None
    return cache.encoder_outputs(prompts)


def with_encoder_outputs(inputs: dict[str, Any], outputs: dict[str, Any] | None) -> dict[str, Any]:
    """`inputs` with the pixel tensors replaced by `outputs` (grids stay: RoPE needs them)."""
    if outputs is None:
        return inputs
    pixel_keys = {key for key, _, _ in MODALITIES.values()}
    kept = {k: v for k, v in inputs.items() if k not in pixel_keys}
    kept["mm_encoder_outputs"] = outputs
    return kept


@dataclass(frozen=True)
class VisualCaches:
    """The caches of a step's vision models, which the step holds: it clears them at its
    start and end, and dynamic sampling keeps only the kept groups' entries (`retain`). The
    models hold them too, for their forwards' lookups (`cached_encoder_outputs`)."""

    caches: tuple[VisualEmbeddingCache, ...] = ()

    def retain(self, prompts: Sequence[PromptEncoding]) -> None:
        """`VisualEmbeddingCache.retain(prompts)` on each cache."""
        for cache in self.caches:
            cache.retain(prompts)

    def clear(self) -> None:
        """Drop the stored embeddings (at the start and the end of a step)."""
        for cache in self.caches:
            cache.clear()


def share_visual_cache(policy: LoadedModel, *others: LoadedModel | None) -> VisualCaches:
    """Give vision models a cache: the policy and its rollout copy share one (encoded by the
    copy, which under FSDP is the unsharded one); a reference or teacher gets its own.
    Returns the caches, for their owner to clear and prune."""
    if not policy.is_vision:
        return VisualCaches()
    rollout = others[0] if others else None
    encoder = rollout.model if rollout is not None else policy.model
    policy.visual_cache = VisualEmbeddingCache(encoder)
    if rollout is not None:
        rollout.visual_cache = policy.visual_cache
    caches = [policy.visual_cache]
    for other in others[1:]:
        if other is not None and other.is_vision:
            other.visual_cache = VisualEmbeddingCache(other.model)
            caches.append(other.visual_cache)
    return VisualCaches(tuple(caches))
