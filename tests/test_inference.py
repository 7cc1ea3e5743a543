"""A checkpoint is prompted in eval, serve and the demo with the token ids it was trained on.

For every prompt style and model family, a run folder whose `config.yaml` names the style,
a think mode, chat-template variables, a coordinate mode and small video settings holds a
tiny checkpoint whose chat template reads those variables. For one record of each family
the prompt token ids of training (`rollout.prompting.decode_prompts`) must equal those of
- eval `--model` (`eval_run_settings` -> `HFBackend`, records framed by `in_model_frame`),
- eval `--endpoint --checkpoint` against `videorl serve` (`EndpointBackend.request` ->
  `serve.schema.parse_request` -> `ChatService.for_run(...).prompt`),
- the demo (`Settings.of_run` -> `prepare`), for the video families it asks.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from typing import Any

import pytest
import torch

from videorl.config import load_config
from videorl.config.run import save_run_config
from videorl.data.families import Family
from videorl.data.prompts import PROMPT_STYLES
from videorl.inference import RunSettings, load_for_inference, pick_device
from videorl.models.tiny import ARCHS

# Run settings per style: the published recipes' think modes, template variables the test
# template reads, both coordinate modes and both time encodings (tgrpo: processor_default).
# A style added later is checked with `OTHER_RUN`.
OTHER_RUN: dict[str, Any] = {"think": True, "kwargs": {"answer_hint": "ok"}, "coordinates": "auto"}
RUNS: dict[str, dict[str, Any]] = {
    "videorl": {"think": True, "kwargs": {"answer_hint": "ok"}, "coordinates": "auto"},
    "orarl": {"think": False, "kwargs": {"enable_thinking": False}, "coordinates": "auto"},
    "taro": {"think": True, "kwargs": {"answer_hint": "ok"}, "coordinates": "record"},
    "video_r1": {
        "think": True,
        "kwargs": {},
        "coordinates": "auto",
        "time_encoding": "processor_default",
    },
}
VIDEO = ["video.fps=2", "video.max_frames=4", "video.min_pixels=784", "video.max_pixels=3136"]
FACTOR = {"qwen2_5_vl": 28, "qwen3_vl": 32, "qwen3_5": 32}
DEMO_FAMILIES = (
    Family("temporal_grounding"),
    Family("tracking"),
    Family("spatio_temporal_grounding"),
    Family("video_qa"),
)
# The tiny Qwen-VL template, plus Qwen3's empty think block for enable_thinking=false and a
# variable only a run's chat_template_kwargs sets.
TAIL = "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
THINKING_TAIL = (
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% endif %}"
    "{% if answer_hint is defined %}{{ answer_hint }} {% endif %}{% endif %}"
)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    from videorl.data.loaders import load_records
    from videorl.data.synth import synthesize

    path = synthesize(tmp_path_factory.mktemp("records"), ["all"], n=1, seed=5)
    return load_records(path).records


@pytest.fixture(scope="module")
def checkpoints(tiny_model_dir, tmp_path_factory):
    """arch -> (run folder, its final/ checkpoint, the checkpoint loaded), built once."""
    from videorl.models.loading import load_model

    built: dict[str, tuple] = {}

    def get(arch: str):
        if arch not in built:
            run = tmp_path_factory.mktemp(f"run_{arch}")
            final = run / "final"
            shutil.copytree(tiny_model_dir(arch), final)
            template = final / "chat_template.jinja"
            text = template.read_text()
            assert text.endswith(TAIL)
            template.write_text(text.removesuffix(TAIL) + THINKING_TAIL)
            built[arch] = (run, final, load_model(final))
        return built[arch]

    return get


def write_run(run, arch: str, style: str):
    """The run's config.yaml, as `videorl train` writes it; returns the config."""
    settings = RUNS.get(style, OTHER_RUN)
    factor = [f"video.factor={FACTOR[arch]}"] if arch in FACTOR else []
    config = load_config(
        None,
        [
            *VIDEO,
            *factor,
            f"data.prompt_style={style}",
            f"data.think={str(settings['think']).lower()}",
            f"data.coordinates={settings['coordinates']}",
            f"video.time_encoding={settings.get('time_encoding', 'sampled')}",
        ],
    )
    data = dataclasses.replace(config.data, chat_template_kwargs=settings["kwargs"])
    save_run_config(dataclasses.replace(config, data=data), run)
    return load_config(run / "config.yaml")


def training_prompt(loaded, record, config):
    from videorl.rollout.prompting import decode_prompts
    from videorl.video.cache import VideoCache

    decoded = decode_prompts([record], VideoCache(config.video), loaded, config.data)
    assert len(decoded.prompts) == 1
    return decoded.prompts[0].input_ids


def eval_prompt(loaded, record, final):
    from videorl.eval.backends import HFBackend
    from videorl.eval.commands import eval_run_settings
    from videorl.eval.runner import in_model_frame
    from videorl.video.cache import VideoCache

    run = eval_run_settings(str(final), think=None, prompt_style=None)
    backend = HFBackend(loaded, run)
    media = None if record.media is None else VideoCache(run.video).get(record.media)
    (prompt,) = backend.encode([(in_model_frame(record, media, backend), media)])
    return prompt.input_ids


def served_prompt(loaded, record, final):
    """What `videorl serve` encodes for the request `eval --endpoint --checkpoint` sends."""
    from videorl.eval.commands import endpoint_model_type, eval_backend, eval_run_settings
    from videorl.eval.runner import in_model_frame
    from videorl.serve.chat import ChatService
    from videorl.serve.limits import ServeLimits
    from videorl.serve.schema import parse_request
    from videorl.video.cache import VideoCache

    endpoint = "http://127.0.0.1:9/v1"
    run = eval_run_settings(str(final), think=None, prompt_style=None)
    client = eval_backend(
        None,
        run,
        16,
        "cpu",
        endpoint=endpoint,
        served_model="tiny",
        model_type=endpoint_model_type(endpoint, "tiny", str(final), None),
        concurrency=1,
        api_key=None,
    )
    assert client.model_type == loaded.model_type
    media = None if record.media is None else VideoCache(run.video).get(record.media)
    body = client.request((in_model_frame(record, media, client), media))
    request = parse_request(json.dumps(body).encode())
    service = ChatService.for_run(loaded, "tiny", RunSettings.from_checkpoint(final), ServeLimits())
    return service.prompt(request).encoding.input_ids


def demo_prompt(loaded, record, final):
    from videorl.demo.inference import Settings, prepare

    settings = Settings.of_run(RunSettings.from_checkpoint(final))
    return prepare(loaded, record.video.path, None, settings, record).prompt.input_ids


def assert_same(tokenizer, expected, got, where: str) -> None:
    if not torch.equal(expected, got):
        pytest.fail(
            f"{where} prompt differs from training's:\n"
            f"training: {tokenizer.decode(expected)!r}\n{where}: {tokenizer.decode(got)!r}"
        )


@pytest.mark.parametrize("style", PROMPT_STYLES)
@pytest.mark.parametrize("arch", ARCHS)
def test_eval_serve_and_demo_prompt_as_training(arch, style, checkpoints, records):
    run, final, loaded = checkpoints(arch)
    config = write_run(run, arch, style)
    tokenizer = loaded.tokenizer
    run_settings = RUNS.get(style, OTHER_RUN)
    kwargs = {"enable_thinking": run_settings["think"], **run_settings["kwargs"]}
    tail = "" if kwargs["enable_thinking"] else "<think>\n\n</think>\n\n"
    tail += f"{kwargs['answer_hint']} " if "answer_hint" in kwargs else ""
    asked = [r for r in records if loaded.is_vision or r.media is None]
    assert asked
    for record in asked:
        expected = training_prompt(loaded, record, config)
        assert tokenizer.decode(expected).endswith(f"assistant\n{tail}")  # the run's variables
        where = f"{arch} {style} {record.family.value}"
        assert_same(tokenizer, expected, eval_prompt(loaded, record, final), f"eval {where}")
        assert_same(tokenizer, expected, served_prompt(loaded, record, final), f"serve {where}")
        if loaded.is_vision and record.family in DEMO_FAMILIES:
            assert_same(tokenizer, expected, demo_prompt(loaded, record, final), f"demo {where}")


def test_run_settings_from_checkpoint_and_flags(tmp_path):
    assert RunSettings.from_checkpoint(tmp_path) == RunSettings()
    (tmp_path / "final").mkdir()
    save_run_config(
        load_config(
            None,
            ["data.prompt_style=taro", "data.coordinates=record", "video.min_pixels=3136"],
        ),
        tmp_path,
    )
    run = RunSettings.from_checkpoint(tmp_path / "final")
    assert run.source == (tmp_path / "config.yaml").resolve()
    assert (run.prompt_style, run.coordinates, run.think) == ("taro", "record", True)
    assert run.convention("qwen3_vl") is None  # record: each record's own frame
    assert RunSettings().convention("qwen3_vl") == "norm1000"
    flagged = run.override(think=False, prompt_style="orarl", max_pixels=1000, fps=1.0)
    assert (flagged.think, flagged.prompt_style, flagged.video.fps) == (False, "orarl", 1.0)
    assert (flagged.video.min_pixels, flagged.video.max_pixels) == (1000, 1000)
    assert flagged.template_kwargs() == {"enable_thinking": False}
    assert "prompt style orarl" in flagged.summary() and "config.yaml" in flagged.summary()


def test_loader_picks_the_device_and_dtype(tiny_model_dir):
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device("auto") == expected and pick_device("cpu") == "cpu"
    loaded = load_for_inference(tiny_model_dir("qwen2_5_vl"), "cpu")
    assert next(loaded.model.parameters()).dtype == torch.float32


def _trained_row(loaded, record, config):
    """The fingerprint the trainer records for the row of `record` (`with_fingerprints`)."""
    from videorl.rollout.batch import RolloutBatch
    from videorl.rollout.fingerprints import with_fingerprints
    from videorl.rollout.prompting import decode_prompts
    from videorl.video.cache import VideoCache

    decoded = decode_prompts([record], VideoCache(config.video), loaded, config.data)
    no = torch.zeros(1, dtype=torch.bool)
    batch = RolloutBatch(
        records=decoded.records,
        prompts=decoded.prompts,
        videos=decoded.media,
        group_ids=torch.zeros(1, dtype=torch.long),
        responses=[torch.tensor([1])],
        texts=[""],
        is_annotation=no,
        off_policy=no,
        truncated=no,
    )
    (recorded,) = with_fingerprints(batch).fingerprints or []
    return recorded


def _served(service, body):
    """The fingerprint `serve` computes for a request body, and the digest it answers with."""
    from videorl.models.fingerprint import fingerprint
    from videorl.models.generate import Generation
    from videorl.serve.schema import parse_request

    prompt = service.prompt(parse_request(json.dumps(body).encode()))
    answer = Generation([torch.tensor([1])], [torch.zeros(1)], [False])
    source = prompt.encoding.source
    assert source is not None
    seen = fingerprint(prompt.encoding, [source.video])
    return seen, service.completion(prompt, answer)["input_fingerprint"]


def test_one_input_gives_one_fingerprint_in_train_eval_serve_and_demo(
    checkpoints, records, tmp_path
):
    """One video and question: the digest a training row records, the one eval writes into
    predictions.jsonl, the one `serve` answers with (the video sent as a file) and the one
    the demo shows are one; eval --endpoint sends JPEG frames, which only the pixels tell."""
    from pathlib import Path

    from videorl.demo.inference import Settings, ask
    from videorl.demo.views import build_view
    from videorl.eval.backends import HFBackend
    from videorl.eval.commands import eval_run_settings
    from videorl.eval.predictions import read_predictions
    from videorl.eval.runner import generate_predictions
    from videorl.models.fingerprint import first_difference
    from videorl.serve.chat import ChatService
    from videorl.serve.limits import ServeLimits
    from videorl.video.cache import VideoCache

    run, final, loaded = checkpoints("qwen2_5_vl")
    config = write_run(run, "qwen2_5_vl", "videorl")
    record = next(r for r in records if r.family == Family("temporal_grounding"))
    assert record.video is not None
    trained = _trained_row(loaded, record, config)

    settings = eval_run_settings(str(final), think=None, prompt_style=None)
    out = tmp_path / "predictions.jsonl"
    backend = HFBackend(loaded, settings, max_new_tokens=2)
    generate_predictions(
        [record], backend, out, videos=VideoCache(settings.video), batch_size=1, progress=False
    )
    evaluated = read_predictions(out)[record.id].input_fingerprint

    run_settings = RunSettings.from_checkpoint(final)
    video = Path(record.video.path)
    service = ChatService.for_run(
        loaded, "tiny", run_settings, ServeLimits(), media_root=video.parent
    )
    content = [
        {"type": "video_url", "video_url": {"url": video.name}},
        {"type": "text", "text": run_settings.prompt_text(record)},
    ]
    body = {"model": "tiny", "messages": [{"role": "user", "content": content}]}
    _, served = _served(service, body)

    result = ask(loaded, str(video), None, Settings.of_run(run_settings), record)
    shown = result.input_fingerprint
    assert f"Input fingerprint `{shown}`" in build_view(result, think=True).answer

    assert len(trained.digest) == 16 and trained.digest == evaluated == served == shown
    # eval --endpoint sends JPEG frames (quality 95): the same tokens, grids and timestamps,
    # other pixels, and the fingerprint says so
    client = eval_backend_for(final)
    media = VideoCache(settings.video).get(record.media)
    sent, _ = _served(service, client.request((record, media)))
    difference = first_difference(trained, sent)
    assert difference is not None and difference.startswith("the pixel tensors differ")


def eval_backend_for(final):
    """`eval --endpoint --checkpoint final` (the request it would send; no server runs)."""
    from videorl.eval.commands import endpoint_model_type, eval_backend, eval_run_settings

    endpoint = "http://127.0.0.1:9/v1"
    return eval_backend(
        None,
        eval_run_settings(str(final), think=None, prompt_style=None),
        16,
        "cpu",
        endpoint=endpoint,
        served_model="tiny",
        model_type=endpoint_model_type(endpoint, "tiny", str(final), None),
        concurrency=1,
        api_key=None,
    )
