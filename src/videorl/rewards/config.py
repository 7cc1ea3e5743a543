"""Reward configuration, validated at load time (docs/methods.md#rewards,
#temporal-sensitivity-reward).

Errors name the key (relative to its section: the config loader puts `reward.` and the
section's path in front), the value and the fix; an unknown family name in `plugins` is a
configuration error here, never a silent 0 during training.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from videorl.config.constraints import Between, Checked, Constraint, Ge, Gt, Range
from videorl.config.loader import build
from videorl.data.families import parse_family
from videorl.errors import ConfigError
from videorl.rewards.plugins import load_plugin

TgShaping = Literal["iou", "iou_v2"]
PluginMode = Literal["replace", "extend"]
Composition = Literal["product", "sum"]
TgParser = Literal["strict", "taro"]
RewardMode = Literal["videorl", "orarl", "video_r1", "videoauto_r1"]
JudgeStyle = Literal["videorl", "longvt"]
BoundaryShuffle = Literal["videorl", "taro"]


class _Section(Checked):
    """A reward section: keys relative to it (the loader puts `reward.` and the section's
    path in front), a refused value said as `key=value is invalid; set ...`."""

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        return f"{key}={value!r} is invalid; set {constraint.wanted()}"


def _check_flags(section: object, *names: str) -> None:
    """Flags built in code (not loaded) must be booleans, not truthy values."""
    for name in names:
        if not isinstance(getattr(section, name), bool):
            raise ConfigError(f"{name}={getattr(section, name)!r}; set true or false")


@dataclass(frozen=True)
class SensitivityConfig(_Section):
    """TaRO temporal-sensitivity reward (docs/methods.md#temporal-sensitivity-reward): bonus
    `alpha * 1[d_i > thr + margin]` for TG rows whose tIoU >= `gate`; `thr` is the group mean of
    d (`"group_mean"`) or a constant; frames within +-`radius` seconds of each ground-truth
    boundary are shuffled. `enabled` tells the trainer whether to run the two extra log-prob
    passes."""

    enabled: bool = False
    """Add TaRO's temporal-sensitivity bonus (two extra log-prob passes per step)."""
    alpha: Annotated[float, Ge(0)] = 0.3
    """Bonus added to a qualifying row."""
    margin: Annotated[float, Range()] = 0.0
    """A row qualifies when its d exceeds the threshold by more than this."""
    gate: Annotated[float, Between(0, 1)] = 0.7
    """Only TG rows with tIoU >= gate can earn the bonus."""
    radius: Annotated[float, Gt(0)] = 3.0
    """Frames within this many seconds of a ground-truth boundary are shuffled."""
    threshold: Literal["group_mean"] | float = "group_mean"
    """group_mean (the group's mean d) or a constant threshold on d."""
    shuffle: BoundaryShuffle = "videorl"
    """Which frames move: videorl (start / end sets disjoint, each a cyclic permutation, so every
    frame near a boundary moves) or taro (TaRO's shuffle_boundary_frames: times from the first
    sampled frame, overlapping sets shuffled one after the other by randperm)."""

    def __post_init__(self) -> None:
        _check_flags(self, "enabled")
        super().__post_init__()
        if self.threshold != "group_mean":
            if isinstance(self.threshold, str):  # built directly, not loaded
                raise ConfigError(f"threshold={self.threshold!r}; set 'group_mean' or a number")
            if not Range().admits(self.threshold):
                raise ConfigError(self.refusal("threshold", self.threshold, Range()))
            object.__setattr__(self, "threshold", float(self.threshold))


@dataclass(frozen=True)
class OverlongConfig(_Section):
    """DAPO's overlong reward shaping (`rewards/length.py`): over the last `buffer_len`
    tokens of the `rollout.max_new_tokens` budget the penalty grows linearly from 0 to
    `-penalty_factor` (DAPO `recipe/dapo`: `overlong_buffer.len` 4096, `penalty_factor` 1.0)."""

    enabled: bool = False
    """Add DAPO's overlong penalty to the generated rows' rewards."""
    buffer_len: Annotated[int, Ge(1)] = 4096
    """Tokens at the end of the rollout.max_new_tokens budget over which the penalty grows (>=
    1)."""
    penalty_factor: Annotated[float, Ge(0)] = 1.0
    """Penalty at the full budget; it grows linearly from 0 over the buffer."""

    def __post_init__(self) -> None:
        _check_flags(self, "enabled")
        super().__post_init__()


@dataclass(frozen=True)
class LengthBandConfig(_Section):
    """Video-R1's length reward (`rewards/length.py`): `+bonus` for a correct row (task
    component > `correct_threshold`) whose response has `min <= tokens <= max`, in a group
    with at least `min_correct` correct rows (Video-R1 `grpo_trainer.py`, `len_control`:
    accuracy > 0.1, 320..512 tokens, +0.2, `len(selected_indices) > 1`)."""

    enabled: bool = False
    """Add Video-R1's length bonus to correct rows of a length within the band."""
    min: Annotated[int, Ge(0)] = 320
    """Shortest response in tokens that earns the bonus."""
    max: Annotated[int, Ge(0)] = 512
    """Longest response in tokens that earns the bonus (>= min)."""
    bonus: Annotated[float, Ge(0)] = 0.2
    """Reward added to a qualifying row."""
    correct_threshold: Annotated[float, Between(0, 1)] = 0.1
    """A row is correct when its task component exceeds this."""
    min_correct: Annotated[int, Ge(1)] = 2
    """Correct rows a group needs before any earns the bonus."""

    def __post_init__(self) -> None:
        _check_flags(self, "enabled")
        super().__post_init__()
        if self.max < self.min:
            raise ConfigError(
                f"max={self.max} is below min={self.min}; set max >= min (Video-R1: 320 and "
                "512 tokens)"
            )


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class JudgeConfig(_Section):
    """An LLM judge for open-ended answers (`rewards/judge.py`), as LongVT's
    `custom_rewards/vl_agent.py`: a chat model behind an OpenAI-compatible endpoint compares
    the answer with the reference and replies 1, 0.5 or 0. The LongVT plug-in
    (`rewards/longvt.py`) asks it for the accuracy of open-ended records when `url` is set; a
    judge that cannot be reached, times out, fails or replies something else scores 0, counted
    in `reward/judge/failed_<reason>`. Needs the `judge` extra (`pip install
    'videorl[judge]'`)."""

    url: str | None = None
    """Base URL of the OpenAI-compatible server (http or https), e.g.
    `http://localhost:8000/v1`; null = no judge."""
    model: str | None = None
    """The judge's model name; null = the first model the server lists (`GET /models`), as
    LongVT does."""
    api_key_env: str | None = None
    """The NAME of the environment variable that holds the API key (never the key itself);
    null = no key (the placeholder `EMPTY`, as LongVT sends to its vLLM server)."""
    temperature: Annotated[float, Between(0, 2)] = 0.3
    """Sampling temperature of the judge (LongVT: 0.3)."""
    max_tokens: Annotated[int | None, Ge(1)] = 16
    """Most tokens the judge may reply; null = no limit (LongVT sends none)."""
    style: JudgeStyle = "videorl"
    """Prompt and reply reading: videorl (ours: six examples, a strict first-line verdict) or
    longvt (LongVT's vl_agent.py prompt, system turn, random seed and lenient reading)."""
    timeout_s: Annotated[float, Gt(0)] = 30.0
    """Seconds one request may take; each retry gets as long. The total, `timeout_s *
    (max_retries + 1)`, must stay below `reward.timeout_s`."""
    max_retries: Annotated[int, Ge(0)] = 2
    """Retries of a request that failed to connect, timed out or got a 408/429/5xx (the
    openai client's default, which LongVT uses)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.url is not None:
            parts = urlsplit(self.url) if isinstance(self.url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise ConfigError(
                    f"url={self.url!r} is not an http(s) URL; set the judge server's base URL, "
                    "e.g. http://localhost:8000/v1, or null for no judge"
                )
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise ConfigError(
                f"model={self.model!r}; set the judge's model name or null for the first model "
                "the server lists"
            )
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not _ENV_NAME.fullmatch(self.api_key_env)
        ):
            # The value is not echoed: it may be a key pasted by mistake.
            raise ConfigError(
                "api_key_env: not an environment variable name; set the NAME of the "
                "variable that holds the key (e.g. JUDGE_API_KEY), never the key itself"
            )
        if self.url is None:
            return
        if self.api_key_env is not None and not os.environ.get(self.api_key_env):
            raise ConfigError(
                f"api_key_env: the environment variable {self.api_key_env} is not set; export "
                "it with the judge's API key, or set api_key_env: null for a server without keys"
            )
        if importlib.util.find_spec("openai") is None:
            raise ConfigError(
                "url is set but the openai package is missing; install the judge extra: "
                "pip install 'videorl[judge]'"
            )

    @property
    def enabled(self) -> bool:
        return self.url is not None

    @property
    def budget_s(self) -> float:
        """The longest a judged sample may wait on the judge: every try timing out."""
        return self.timeout_s * (self.max_retries + 1)


@dataclass(frozen=True)
class RewardConfig(_Section):
    """How responses are scored.

    - `think_required`: the `<think>` block is mandatory (format 0 without it).
    - `tg_shaping`: `iou` (plain tIoU) or `iou_v2` (TaRO shaping, docs/methods.md#temporal-iou),
      training only.
    - `num_workers`: scoring processes (None = all cores; <= 1 scores in-process).
    - `timeout_s`: per-sample limit in the pool; a sample over it scores 0.
    - `plugins`: family name -> `"module:function"`; `plugin_mode` `replace` uses the
      plug-in's result, `extend` keeps the built-in components, adds the plug-in's as
      `plugin/<key>` and sets `overall = (1 - plugin_weight) * built-in + plugin_weight * plug-in`.
    - `composition`: `product` (`overall = task * format`, in [0, 1]) or `sum`
      (`overall = format + task`, in [0, 2], TaRO's `compute_vtg_score`; the task is then
      scored on the last answer block even when the format check fails, as TaRO does).
    - `tg_parser`: `strict` (the whole answer is `S to E`) or `taro` (the last `Xs to Ys`
      inside the answer, `s` suffix required, text around it allowed: TaRO's
      `parse_timestamp_output`).
    - `overlong`: DAPO's soft penalty over the last tokens of the budget; `length_band`:
      Video-R1's bonus for correct rows of a length in a band (`rewards/length.py`; both are
      added to the generated rows' rewards after scoring, annotation rows excluded).
    - `mode`: `videorl` (the default: our scorers, `rewards/<family>.py`) or `orarl` (the
      OraRL recipes: OraRL's per-task adapters exactly, `rewards/orarl_adapters.py`; math
      keeps ours). `orarl` changes, per family: the answer shape (several `</think>`, any
      tag case); TG `S to E` without `s` suffix or exponent; SG a tagged payload passes
      when any box reads from it (JSON, `(x1, y1), (x2, y2)`, last four numbers); SEG
      format 0 for a malformed object, mask scores with 0..1000 points rounded onto the
      mask, a constant 0.10 time term and the mask of the frame at the *predicted* time,
      point similarity in raw coordinate units; TRK and STG format 0 unless every box key
      is an integer frame / second and every box reads, keys matched exactly, STG always
      `0.2 tIoU + 0.8 sIoU`; SI MRA in floats (target 10, prediction 9: 0.8, ours 0.9), a
      bare number or a bare letter A-D; QA a bare letter A-H in any case. `orarl` scores
      `task * format` with OraRL's tIoU and no think requirement, so it refuses
      `composition: sum`, `tg_shaping: iou_v2`, `tg_parser: taro`, `think_required: true`.
      `video_r1` (the T-GRPO recipe: Video-R1's `grpo.py`, `rewards/video_r1.py`) scores
      multiple-choice and numeric video-QA / spatial-intelligence records as Video-R1 does:
      format is a full match of `<think>.*?</think>\\s*<answer>.*?</answer>` on the raw text,
      the answer the first `<answer>` block, a choice the exact string (`B`, not `(B)` or
      `b`), a number exact to two decimals (numerical) or `1 - relative error`
      (regression); `overall = accuracy + format`, so it needs `composition: sum`. Other
      records keep the family's reward.
      `videoauto_r1` (VideoAuto-R1's "think once, answer twice", `rewards/answer_twice.py`)
      reads `\\boxed{a1}<think>..</think>\\boxed{a2}` and scores `overall = 0.9 R(a1) +
      1.1 R(a2) + format + 0.3 fallback` with the family's own scorer as R; families whose
      payload cannot be boxed (nested JSON) keep their reward.
    """

    think_required: bool = False
    """A response without a `<think>` block gets format 0."""
    tg_shaping: TgShaping = "iou"
    """Temporal-grounding task reward: iou (plain tIoU) or iou_v2 (TaRO's shaping; training
    only)."""
    num_workers: Annotated[int | None, Ge(0)] = None
    """Scoring processes; null = all cores, 0 or 1 = in-process."""
    timeout_s: Annotated[float, Gt(0)] = 5.0
    """Per-sample scoring time limit in seconds; a sample over it scores 0."""
    plugins: dict[str, str] = field(default_factory=dict)
    """Family name -> `module:function` reward plug-in (imported when the config loads)."""
    plugin_mode: PluginMode = "replace"
    """replace (the plug-in's reward) or extend (blend it with the built-in by plugin_weight)."""
    plugin_weight: Annotated[float, Between(0, 1)] = 0.5
    """extend mode: weight of the plug-in in overall."""
    sensitivity: SensitivityConfig = field(default_factory=SensitivityConfig)
    """TaRO temporal-sensitivity reward (docs/methods.md#temporal-sensitivity-reward): bonus `alpha
    * 1[d_i > thr + margin]` for TG rows whose tIoU >= `gate`; `thr` is the group mean of d
    (`"group_mean"`) or a constant; frames within +-`radius` seconds of each ground-truth
    boundary are shuffled. `enabled` tells the trainer whether to run the two extra log-prob
    passes."""
    composition: Composition = "product"
    """How format and task combine: product (task x format, in [0, 1]) or sum (format + task, in [0,
    2], TaRO)."""
    tg_parser: TgParser = "strict"
    """Temporal-grounding answer parser: strict (`S to E`) or taro (the last `Xs to Ys`)."""
    overlong: OverlongConfig = field(default_factory=OverlongConfig)
    """DAPO's overlong reward shaping (`rewards/length.py`): over the last `buffer_len` tokens of
    the `rollout.max_new_tokens` budget the penalty grows linearly from 0 to `-penalty_factor`
    (DAPO `recipe/dapo`: `overlong_buffer.len` 4096, `penalty_factor` 1.0)."""
    length_band: LengthBandConfig = field(default_factory=LengthBandConfig)
    """Video-R1's length reward (`rewards/length.py`): `+bonus` for a correct row (task component >
    `correct_threshold`) whose response has `min <= tokens <= max`, in a group with at least
    `min_correct` correct rows (Video-R1 `grpo_trainer.py`, `len_control`: accuracy > 0.1,
    320..512 tokens, +0.2, `len(selected_indices) > 1`)."""
    mode: RewardMode = "videorl"
    """videorl (our scorers), orarl (OraRL's per-task adapters, exactly), video_r1 (Video-R1's
    answer parsing and scoring) or videoauto_r1 (VideoAuto-R1's two boxed answers); details
    above."""
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """An LLM judge for open-ended answers (`rewards/judge.py`), as LongVT's
    `custom_rewards/vl_agent.py`: a chat model behind an OpenAI-compatible endpoint compares the
    answer with the reference and replies 1, 0.5 or 0. The LongVT plug-in (`rewards/longvt.py`)
    asks it for the accuracy of open-ended records when `url` is set; a judge that cannot be
    reached, times out, fails or replies something else scores 0, counted in
    `reward/judge/failed_<reason>`. Needs the `judge` extra (`pip install 'videorl[judge]'`)."""

    def __post_init__(self) -> None:
        _check_flags(self, "think_required")
        self._check_sections()
        super().__post_init__()
        self._check_mode()
        judge = self.judge
        if judge.enabled and judge.budget_s >= self.timeout_s:
            raise ConfigError(
                f"timeout_s={self.timeout_s:g} is not above the judge's "
                f"judge.timeout_s * (judge.max_retries + 1) = {judge.budget_s:g} s (a sample "
                "past timeout_s is killed and scores 0); raise reward.timeout_s or lower "
                "reward.judge.timeout_s / max_retries"
            )
        if not isinstance(self.plugins, dict):
            raise ConfigError(
                f"plugins={self.plugins!r}; give a mapping family -> 'module:function'"
            )
        # Canonical family names as keys, so that the router's lookup is exact.
        plugins: dict[str, str] = {}
        for name, spec in self.plugins.items():
            try:
                family = parse_family(name).value
            except ConfigError as exc:
                raise ConfigError(f"plugins: {exc}") from None
            if family in plugins:
                raise ConfigError(
                    f"plugins: {name!r} names {family}, which already has a plug-in; "
                    "keep one entry per family"
                )
            load_plugin(str(spec))  # imported now: a broken plug-in is a load-time error
            plugins[family] = str(spec)
        object.__setattr__(self, "plugins", plugins)

    def _check_sections(self) -> None:
        """Sections built in code must be given as sections (`from_dict` takes mappings)."""
        for name, section in (
            ("sensitivity", SensitivityConfig),
            ("overlong", OverlongConfig),
            ("length_band", LengthBandConfig),
            ("judge", JudgeConfig),
        ):
            if not isinstance(getattr(self, name), section):
                raise ConfigError(
                    f"{name}={getattr(self, name)!r}; give a {section.__name__} "
                    "(RewardConfig.from_dict accepts a mapping)"
                )

    def _check_mode(self) -> None:
        """`mode=orarl` and `mode=video_r1` fix how the terms combine."""
        if self.mode == "orarl":
            clashes = [
                f"{key}={getattr(self, key)!r}"
                for key, ours in (
                    ("composition", "product"),
                    ("tg_shaping", "iou"),
                    ("tg_parser", "strict"),
                    ("think_required", False),
                )
                if getattr(self, key) != ours
            ]
            if clashes:
                raise ConfigError(
                    f"mode=orarl scores as OraRL's adapters (accuracy * format, plain tIoU, its "
                    f"own answer parsing, think optional); it cannot be combined with "
                    f"{', '.join(clashes)}: drop those keys or set mode=videorl"
                )
        if self.mode == "video_r1" and self.composition != "sum":
            raise ConfigError(
                f"mode=video_r1 sums Video-R1's accuracy and format rewards, but "
                f"composition={self.composition!r}; set composition=sum or mode=videorl"
            )

    @property
    def workers(self) -> int:
        """The number of scoring processes: `num_workers`, or the cores this process may run
        on when None (its CPU affinity, which a container or job scheduler may restrict)."""
        if self.num_workers is not None:
            return self.num_workers
        if hasattr(os, "sched_getaffinity"):
            return len(os.sched_getaffinity(0))
        return os.cpu_count() or 1

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardConfig:
        """Build from a plain mapping (a YAML `reward:` section) as the config loader does:
        keys, types and values checked, each error one line naming `reward.<key>`."""
        return build(cls, data, prefix="reward.")
