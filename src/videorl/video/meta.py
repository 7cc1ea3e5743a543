"""`VideoMeta`: the temporal and spatial facts that travel with decoded frames
(docs/methods.md#video-contract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from videorl.video.sampling import TEMPORAL_PATCH

# How the frames' timing reaches the processor (`VideoConfig.time_encoding`).
TimeEncoding = Literal["sampled", "processor_default"]
# The fps the Qwen2.5-VL processor assumed when it was given none, in the transformers that
# Video-R1 trained with (4.49-4.51 `processing_qwen2_5_vl.py`:
# `fps = output_kwargs["videos_kwargs"].pop("fps", 2.0)`): 2 frames per grid = 1.0 s.
PROCESSOR_DEFAULT_FPS = 2.0


@dataclass(frozen=True)
class VideoMeta:
    """What the model must be told about the frames it sees.

    - `source_fps`: frame rate of the file (0 for a still image).
    - `duration`: seconds covered by the clip the frames were sampled from,
      `(stop - first) / source_fps` (the whole video when not clipped; 0 for an image).
    - `frame_indices`: source frame index of each returned frame.
    - `timestamps`: `index / source_fps - clip_start`, seconds relative to the clip start.
    - `fps`: the *actual* sampled fps, `len(frame_indices) / duration` (not the requested one).
    - `clip_start`: the clip's start in source seconds (the origin of `timestamps`).
    - `width`, `height`: size of the returned frames (after resizing).
    - `source_width`, `source_height`: size of the file's frames (the pixel frame in which
      absolute-pixel annotations are usually given).
    - `time_encoding`: how the timing is handed to the processor (`VideoConfig.time_encoding`:
      `sampled` = the fields above; `processor_default` = frame i at `i / 2` seconds, what the
      processor assumed without fps in Video-R1's transformers). Rewards and prompts always
      use the real `timestamps`.
    """

    source_fps: float
    duration: float
    frame_indices: tuple[int, ...]
    timestamps: tuple[float, ...]
    fps: float
    clip_start: float = 0.0
    width: int = 0
    height: int = 0
    source_width: int = 0
    source_height: int = 0
    time_encoding: str = "sampled"

    @classmethod
    def still(
        cls,
        width: int,
        height: int,
        source_width: int | None = None,
        source_height: int | None = None,
    ) -> VideoMeta:
        """An image seen as one frame at time 0 (no frame rate, no duration)."""
        return cls(
            source_fps=0.0,
            duration=0.0,
            frame_indices=(0,),
            timestamps=(0.0,),
            fps=0.0,
            width=width,
            height=height,
            source_width=width if source_width is None else source_width,
            source_height=height if source_height is None else source_height,
        )

    def __post_init__(self) -> None:
        if len(self.frame_indices) != len(self.timestamps):
            raise ValueError(
                f"VideoMeta has {len(self.frame_indices)} frame indices but "
                f"{len(self.timestamps)} timestamps; they must pair up"
            )

    @property
    def num_frames(self) -> int:
        return len(self.frame_indices)

    @property
    def is_image(self) -> bool:
        return self.source_fps == 0.0

    def second_per_grid(self, temporal_patch: int = TEMPORAL_PATCH) -> float:
        """Seconds per temporal grid step, `temporal_patch / fps` (Qwen2.5-VL
        `second_per_grid_ts`); 0 for an image."""
        return temporal_patch / self.fps if self.fps > 0 else 0.0
