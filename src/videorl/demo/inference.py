"""Ask a video a question: decode it, build the family's prompt, generate, parse the answer.

The prompt is the training prompt, built with the checkpoint's run settings
(`inference.RunSettings`: prompt style, think mode, template variables, coordinates, video
sampling), so a checkpoint sees in the demo what it saw in training. A typed question becomes a `TaskRecord` whose
answer is a placeholder: the schema needs one, and only its shape is used (tracking lists
the frames to box, spatio-temporal grounding the second grid).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from videorl.data.families import Family
from videorl.data.records import (
    MediaRef,
    TaskRecord,
)
from videorl.demo.parts import FAMILY_DEMOS
from videorl.errors import DataError, MediaError
from videorl.eval import parsing
from videorl.inference import RunSettings
from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.rewards.payload import Box
from videorl.rewards.protocol import THINK_CLOSE, THINK_OPEN
from videorl.video.decode import DecodedVideo, VideoConfig, decode_video
from videorl.video.meta import VideoMeta

CUT_CLIP = "ffmpeg -ss START -t SECONDS -i IN.mp4 -c copy OUT.mp4"


_VIDEO = VideoConfig()


@dataclass(frozen=True)
class Settings:
    """Generation and decoding settings of one question (the demo's advanced panel) and the
    run settings of the checkpoint (`run`: video sampling, prompt style, template variables,
    coordinates; `inference.RunSettings`, as eval and serve read them).

    The panel starts at the run's fps, frame count and think mode (`Settings.of_run`); the
    defaults are eval's for a checkpoint no run wrote.
    """

    greedy: bool = True
    temperature: float = 0.7
    top_p: float = 0.95
    max_new_tokens: int = 256
    fps: float = _VIDEO.fps
    max_frames: int = _VIDEO.max_frames
    think: bool = False
    max_duration: float = 600.0
    run: RunSettings = field(default_factory=RunSettings)
    # answer-twice models: stop after the first boxed answer at this confidence (None: off)
    early_exit: float | None = None

    @classmethod
    def of_run(cls, run: RunSettings, **overrides: Any) -> Settings:
        """The panel at the run's fps, frame count and think mode (`overrides` win)."""
        panel = {"fps": run.video.fps, "max_frames": run.video.max_frames, "think": run.think}
        return cls(run=run, **{**panel, **overrides})

    def sampling(self) -> SamplingParams:
        if self.max_new_tokens < 1:
            raise DataError(f"max new tokens={self.max_new_tokens}: must be at least 1")
        if not self.greedy and not self.temperature > 0:
            raise DataError(
                f"temperature={self.temperature}: sampling needs a positive "
                "temperature; choose greedy decoding for temperature 0"
            )
        temperature = 0.0 if self.greedy else self.temperature
        return SamplingParams(
            n=1, max_new_tokens=self.max_new_tokens, temperature=temperature, top_p=self.top_p
        )

    def prompting(self) -> RunSettings:
        """The run's prompt settings with the panel's think mode."""
        return dataclasses.replace(self.run, think=self.think)

    def video_config(self, factor: int) -> VideoConfig:
        """How the question's video is decoded: the run's video settings at the panel's fps
        and frame count, not cached; frames are multiples of the run's `video.factor`, or of
        the model's own `factor` for a checkpoint no run wrote."""
        video = self.run.video
        return dataclasses.replace(
            video,
            fps=self.fps,
            min_frames=min(video.min_frames, self.max_frames),
            max_frames=self.max_frames,
            factor=video.factor if self.run.source is not None else factor,
            cache_bytes=0,
            cache_dir=None,
        )


@dataclass(frozen=True)
class Question:
    """What the user asked: the family, the query text and, for QA, the options."""

    family: Family
    text: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prediction:
    """The model's response and its answer parsed for the family (None: not parseable)."""

    response: str
    reasoning: str | None
    window: tuple[float, float] | None = None
    box: Box | None = None
    boxes: dict[float, Box] = field(default_factory=dict)
    letter: str | None = None

    @property
    def parsed(self) -> bool:
        return any(v is not None for v in (self.window, self.box, self.letter)) or bool(self.boxes)


@dataclass(frozen=True)
class Result:
    """One answered question: the record asked, the frames the model saw, its prediction,
    and whether the record's answer is a real ground truth (a bundled example)."""

    record: TaskRecord
    video: DecodedVideo
    prediction: Prediction
    has_truth: bool
    input_fingerprint: str = ""  # the digest of what the model was given (models/fingerprint.py)


def probe_duration(path: str) -> float:
    """Seconds of the first video stream, read from the container (no decoding)."""
    import av

    try:
        with av.open(path) as container:
            if not container.streams.video:
                raise MediaError(f"{path} has no video stream; upload a video file")
            stream = container.streams.video[0]
            if stream.duration is not None and stream.time_base is not None:
                return float(stream.duration * stream.time_base)
            if container.duration is not None:
                return container.duration / av.time_base
            rate = float(stream.average_rate or 0)
            return stream.frames / rate if rate and stream.frames else 0.0
    except av.FFmpegError as err:
        raise MediaError(
            f"cannot read video {path} ({type(err).__name__}: {err}); the file is "
            "corrupt or not a video; upload an MP4, WebM or MOV file"
        ) from err


def check_length(path: str, max_duration: float) -> None:
    seconds = probe_duration(path)
    if seconds > max_duration:
        raise MediaError(
            f"the video lasts {seconds:.0f} s, longer than the demo's limit of "
            f"{max_duration:.0f} s (--max-duration); cut a clip first: {CUT_CLIP}"
        )


def vision_factor(loaded: LoadedModel) -> int:
    """Pixels per merged vision token side (28 Qwen2.5-VL, 32 Qwen3-VL): frame sizes are
    multiples of it."""
    processor = getattr(loaded.processor, "video_processor", None)
    patch, merge = getattr(processor, "patch_size", None), getattr(processor, "merge_size", None)
    return int(patch * merge) if patch and merge else 28


def question_record(question: Question, video_path: str, meta: VideoMeta) -> TaskRecord:
    """A record for a typed question about an uploaded video (placeholder answer)."""
    text = question.text.strip()
    if not text:
        raise DataError("type a query: the event to find, the object to locate, or the question")
    family = question.family
    demo = FAMILY_DEMOS.get(family)
    if demo is None:
        raise DataError(f"the demo does not ask {family.value} questions")
    answer, fields = demo.blank(question.options, meta)
    return TaskRecord(
        id="demo",
        family=family,
        problem=text,
        answer=answer,
        video=MediaRef(path=video_path),
        duration=round(meta.duration, 3),
        width=meta.source_width,
        height=meta.source_height,
        source="demo",
        **fields,
    )


def think_text(response: str) -> str | None:
    """The text of the `<think>` block, if the response has a closed one."""
    _, opened, rest = response.partition(THINK_OPEN)
    reasoning, closed, _ = rest.partition(THINK_CLOSE)
    return reasoning.strip() if opened and closed else None


def parse_prediction(family: Family, response: str, options: tuple[str, ...] = ()) -> Prediction:
    """Read the answer leniently, as `videorl eval` scores it (`eval.parsing`): the last
    `<answer>` block, else the text after the think block, else the whole reply."""
    text = parsing.answer_text(response)
    reasoning = think_text(response)
    demo = FAMILY_DEMOS.get(family)
    found = {} if demo is None else demo.parse(text, options)
    return Prediction(response, reasoning, **found)


@dataclass(frozen=True)
class Prepared:
    """A question ready for generation: the record asked (in the model's box convention),
    the frames the model sees and its prompt."""

    record: TaskRecord
    video: DecodedVideo
    prompt: PromptEncoding

    @property
    def input_fingerprint(self) -> str:
        """The digest of the prompt with its frames, as training and eval record it."""
        from videorl.models.fingerprint import fingerprint

        return fingerprint(self.prompt, [self.video]).digest


def prepare(
    loaded: LoadedModel,
    video_path: str,
    question: Question | None,
    settings: Settings,
    example: TaskRecord | None = None,
) -> Prepared:
    """Decode the video and build the prompt of the question (or of the example's own
    record) as training builds it, with the run's settings (`Settings.prompting`)."""
    check_length(video_path, settings.max_duration)
    video = decode_video(video_path, settings.video_config(vision_factor(loaded)))
    if example is not None:
        record = example
    elif question is not None:
        record = question_record(question, video_path, video.meta)
    else:
        raise DataError("ask a question or pick an example")
    prompting = settings.prompting()
    record = prompting.in_model_frame(record, loaded.model_type, video)
    return Prepared(record, video, prompting.encode(loaded, record, video))


def ask(
    loaded: LoadedModel,
    video_path: str,
    question: Question | None,
    settings: Settings,
    example: TaskRecord | None = None,
) -> Result:
    """Prompt the model with the question (or the example's own record, whose answer is
    then the ground truth) and parse its answer."""
    sampling = settings.sampling()
    prepared = prepare(loaded, video_path, question, settings, example)
    if settings.early_exit is None:
        (generation,) = generate(loaded, [prepared.prompt], sampling)
    else:
        from videorl.rollout.early_exit import generate_with_early_exit

        [generation], _ = generate_with_early_exit(
            loaded, [prepared.prompt], sampling, settings.early_exit
        )
    response = loaded.tokenizer.decode(generation.token_ids[0], skip_special_tokens=True)
    record = prepared.record
    prediction = parse_prediction(record.family, response, record.options)
    return Result(
        record, prepared.video, prediction, example is not None, prepared.input_fingerprint
    )
