"""A checkpoint as inference uses it: the settings of the training run that wrote it and the
model loaded on a device. `videorl eval`, `videorl serve` and `videorl demo` read both here.

`RunSettings.from_checkpoint(path)` reads the run's `config.yaml`, found in the checkpoint
folder or up to two levels above it (`final/`, `best/`, `step-N/model/`;
`run_config.find_run_config`): video sampling (`video:`), think mode (`data.think`), prompt
style (`data.prompt_style`), chat-template variables (`data.chat_template_kwargs`) and box
coordinates (`data.coordinates`). A folder no run wrote (a Hub id, a `make-tiny` folder) gets
the defaults: `VideoConfig()`, no think block, videorl's prompts, no extra template
variables, the model family's coordinates. Command-line flags override (`override`).

`in_model_frame` and `encode` turn a record and its decoded media into the prompt the way
training does (`to_model_coordinates`, then `rollout.prompting.encode_record` with the
run's think mode, template variables and prompt style), so a checkpoint is prompted in
eval, serve and the demo with the token ids it was trained on
(`tests/test_inference.py`). `load_for_inference(path, device)` loads it: bf16 on
a GPU, fp32 on the CPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videorl.video.decode import VideoConfig

if TYPE_CHECKING:
    from videorl.config import Config
    from videorl.data.records import TaskRecord
    from videorl.models.inputs import PromptEncoding
    from videorl.models.loaded import LoadedModel


@dataclass(frozen=True)
class RunSettings:
    """What a checkpoint's training run prompted it with; `source` is the run's config.yaml
    (None: no run wrote the checkpoint, the defaults apply)."""

    video: VideoConfig = field(default_factory=VideoConfig)
    think: bool = False
    prompt_style: str = "videorl"
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    coordinates: str = "auto"
    video_as_images: bool = False
    source: Path | None = None

    @classmethod
    def from_config(cls, config: Config, source: Path | None = None) -> RunSettings:
        data = config.data
        return cls(
            video=config.video,
            think=data.think,
            prompt_style=data.prompt_style,
            chat_template_kwargs=dict(data.chat_template_kwargs),
            coordinates=data.coordinates,
            video_as_images=data.video_as_images,
            source=source,
        )

    @classmethod
    def from_checkpoint(cls, path: str | Path) -> RunSettings:
        """The settings of the run that wrote the checkpoint at `path`, else the defaults."""
        from videorl.config import load_config
        from videorl.config.run import find_run_config

        run = find_run_config(path)
        return cls() if run is None else cls.from_config(load_config(run), source=run)

    def override(
        self,
        *,
        think: bool | None = None,
        prompt_style: str | None = None,
        fps: float | None = None,
        max_frames: int | None = None,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
    ) -> RunSettings:
        """These settings with the values given (None: keep the run's). A `max_pixels` below
        the run's `min_pixels` lowers `min_pixels` to it."""
        video = self.video
        if max_pixels is not None and min_pixels is None:
            min_pixels = min(video.min_pixels, max_pixels)
        return dataclasses.replace(
            self,
            video=dataclasses.replace(
                video,
                fps=video.fps if fps is None else fps,
                max_frames=video.max_frames if max_frames is None else max_frames,
                min_pixels=video.min_pixels if min_pixels is None else min_pixels,
                max_pixels=video.max_pixels if max_pixels is None else max_pixels,
            ),
            think=self.think if think is None else think,
            prompt_style=self.prompt_style if prompt_style is None else prompt_style,
        )

    def template_kwargs(self) -> dict[str, Any]:
        """The chat template's variables: `enable_thinking=think` unless the run's
        `chat_template_kwargs` sets it."""
        from videorl.models.chat_template import template_kwargs

        return template_kwargs(self.think, self.chat_template_kwargs)

    def prompt_text(self, record: TaskRecord) -> str:
        """The user text of `record` (its family's template in the run's prompt style)."""
        from videorl.data.prompts import build_prompt

        return build_prompt(record, think=self.think, style=self.prompt_style)

    def convention(self, model_type: str) -> str | None:
        """The box convention of a model type under the run's `data.coordinates`: `abs`,
        `norm1000`, or None (each record's own)."""
        from videorl.data.coordinates import model_convention

        return model_convention(model_type, self.coordinates)

    def in_model_frame(self, record: TaskRecord, model_type: str, media: Any) -> TaskRecord:
        """`record` with its boxes in the model's convention at the decoded frames' size."""
        from videorl.data.coordinates import frame_size, to_model_coordinates

        return to_model_coordinates(record, self.convention(model_type), frame_size(media))

    def encode(
        self,
        loaded: LoadedModel,
        record: TaskRecord,
        media: Any,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> PromptEncoding:
        """The prompt of `record` (already in the model's frame) with its decoded media,
        listing `tools` (function schemas) when given, as training does."""
        from videorl.rollout.prompting import record_encoder

        return record_encoder(loaded, self, tools)(record, media)

    def summary(self) -> str:
        """One line: what these settings prompt and sample with, and where they come from."""
        video = self.video
        kwargs = f", template {self.chat_template_kwargs}" if self.chat_template_kwargs else ""
        where = f"from {self.source}" if self.source is not None else "(defaults: no run found)"
        return (
            f"think={self.think}, prompt style {self.prompt_style}{kwargs}, coordinates "
            f"{self.coordinates}, fps={video.fps:g}, max_frames={video.max_frames}, pixels "
            f"{video.min_pixels}-{video.max_pixels} {where}"
        )


def pick_device(device: str) -> str:
    """`auto` -> `cuda` when a GPU is available, else `cpu`; anything else as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_for_inference(path: str | Path, device: str = "auto") -> LoadedModel:
    """The checkpoint (folder, Hub id or LoRA adapter folder) on `device` (`auto`: a GPU
    when there is one): bf16 on a GPU, fp32 on the CPU."""
    import torch

    from videorl.models.loading import load_model

    device = pick_device(device)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    return load_model(path, dtype=dtype, device=device)
