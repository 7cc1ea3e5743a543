"""TimeSearch-R's `seek_video_frames` (issue 49 item 2): frames retrieved by a text query
from the video's embedding index, the index cached on disk and reused, bad requests
answered with an error text for the model."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from videorl.config import FrameSearchConfig
from videorl.rollout.tools import ToolContext, ToolRunner, resolve_tools
from videorl.rollout.tools import frame_index as fi
from videorl.rollout.tools.parsing import ToolCall
from videorl.rollout.tools.timesearch import dpp_select, evenly
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4
from videorl.video.media import MediaRef

importlib.import_module("videorl.rollout.tools.timesearch")  # registers the tool

FPS = 4
RED = (2.0, 3.0)  # seconds the red square shows
BLUE = (10.0, 11.0)


def scene(seconds: int = 16) -> np.ndarray:
    frames = np.full((seconds * FPS, 64, 64, 3), 20, dtype=np.uint8)
    for (start, end), color in ((RED, (230, 40, 40)), (BLUE, (50, 90, 240))):
        frames[int(start * FPS) : int(end * FPS), 16:48, 16:48] = color
    return frames


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = write_mp4(tmp_path_factory.mktemp("seek") / "v.mp4", scene(), FPS)
    config = VideoConfig(fps=0.25, min_frames=2, max_frames=4, min_pixels=28 * 28)
    return path, config, decode_video(path, config)


@pytest.fixture
def store(tmp_path):
    yield fi.configure(FrameSearchConfig(fps=2.0, cache_mb=1.0), tmp_path / "frame_index")
    fi.configure(FrameSearchConfig(), None)


def call(video, **arguments):
    path, config, decoded = video
    runner = ToolRunner(resolve_tools(["seek_video_frames"]))
    ctx = ToolContext(media=MediaRef(path=str(path)), video=decoded, config=config)
    return runner.run(ToolCall(raw="", name="seek_video_frames", arguments=arguments), ctx)


def times_of(outcome) -> list[float]:
    stamps = outcome.text.split("located at ")[1].split(".\n")[0]
    return [float(t.rstrip("s")) for t in stamps.split(",")]


def test_a_query_retrieves_the_frames_that_match_it(video, store):
    red = call(video, query="the red square", num_frames=2)
    assert red.ok, red.text
    assert all(RED[0] <= t < RED[1] for t in times_of(red)) and len(red.media) == 2
    blue = call(video, query="a blue square", num_frames=2)
    assert all(BLUE[0] <= t < BLUE[1] for t in times_of(blue))
    # the window limits the search: no red inside [5, 16], so the best there is blue
    late = call(video, query="red", start_time=5, num_frames=1)
    assert late.ok and times_of(late)[0] >= 5
    # the returned images are the frames at those times (red pixels in the middle)
    middle = red.media[0].frames[0, :, 32, 32].tolist()
    assert middle[0] > 150 and middle[2] < 100


def test_the_index_is_built_once_then_read_back(video, store, tmp_path):
    call(video, query="red", num_frames=1)
    call(video, query="blue", num_frames=1)
    assert store.built == 1 and len(list((tmp_path / "frame_index").glob("*.pt"))) == 1
    again = fi.configure(store.settings, tmp_path / "frame_index")  # a new process / step
    call(video, query="red", num_frames=1)
    assert again.built == 0 and again.loaded == 1


def test_the_disk_cache_stays_within_its_budget(tmp_path):
    small = fi.FrameIndexStore(FrameSearchConfig(cache_mb=0.001), tmp_path)
    index = fi.FrameIndex(torch.zeros(100, dtype=torch.float64), torch.zeros(100, 8))
    for key in ("a", "b", "c"):
        small._write(key, index)
    assert [p.stem for p in tmp_path.glob("*.pt")] == ["c"]  # the newest stays


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"query": "a dog"}, "name a colour to look for"),
        ({"query": "red", "start_time": 30}, "past the video's end"),
        ({"query": "red", "start_time": 6, "end_time": 5}, "must be greater than start_time"),
        ({"query": "red", "num_frames": 20}, "must be <= 8"),
        ({"query": 3}, "must be string"),
        ({"query": "x" * 1200}, "keep it under 1000"),
    ],
)
def test_bad_requests_are_error_texts(video, store, arguments, message):
    outcome = call(video, **arguments)
    assert not outcome.ok and message in outcome.text and outcome.text.startswith("Error:")


def test_no_query_samples_evenly(video, store):
    outcome = call(video, query="", num_frames=4)
    times = times_of(outcome)
    assert len(times) == 4 and times[0] == 0.0 and times[-1] > 14


def test_dpp_prefers_relevant_and_diverse_frames():
    # frames 0-2 are the same relevant frame, 3 a different relevant one, 4 irrelevant
    embeddings = torch.tensor([[1.0, 0], [1.0, 0], [1.0, 0], [0, 1.0], [0.6, 0.8]])
    relevance = torch.tensor([1.0, 1.0, 1.0, 0.9, 0.0])
    assert dpp_select(relevance, embeddings, 2) == [0, 3]
    assert evenly(10, 3) == [0, 4, 9] and evenly(2, 8) == [0, 1]


def tiny_clip(out):
    """A random-init CLIP with a one-character tokenizer, saved like a real checkpoint."""
    import json

    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    out.mkdir(parents=True, exist_ok=True)
    chars = [chr(c) for c in range(33, 127)]
    vocab = {t: i for i, t in enumerate(chars + [c + "</w>" for c in chars])}
    vocab |= {"<|startoftext|>": len(vocab), "<|endoftext|>": len(vocab) + 1}
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(out / "vocab.json"), str(out / "merges.txt"))
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    text = {**small, "vocab_size": len(vocab), "num_attention_heads": 2}
    text |= {"bos_token_id": len(vocab) - 2, "eos_token_id": len(vocab) - 1, "pad_token_id": 0}
    vision = {**small, "num_attention_heads": 2, "image_size": 32, "patch_size": 8}
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)
    CLIPModel(config).save_pretrained(out)
    return out


def test_a_clip_checkpoint_embeds_the_index(video, tmp_path):
    """`embedder: hf:<path>`: a CLIP/SigLIP model's image and text features (random weights
    here: the call works and the index is cached under the embedder's name, whatever it
    ranks first)."""
    clip = tiny_clip(tmp_path / "clip")
    store = fi.configure(
        FrameSearchConfig(embedder=f"hf:{clip}", fps=2.0), tmp_path / "frame_index"
    )
    try:
        outcome = call(video, query="the red square", num_frames=3)
        assert outcome.ok, outcome.text
        assert len(times_of(outcome)) == 3 and len(outcome.media) == 3
        assert store.built == 1 and store.embedder.name == f"hf:{clip}"
        index = store.get(call_ctx(video))
        assert index.embeddings.shape[1] == 16  # the projection's width
        assert torch.allclose(index.embeddings.norm(dim=-1), torch.ones(len(index.times)))
    finally:
        fi.configure(FrameSearchConfig(), None)


def call_ctx(video):
    path, config, decoded = video
    return ToolContext(media=MediaRef(path=str(path)), video=decoded, config=config)


@pytest.mark.parametrize("control", ["blank", "frozen"])
def test_under_a_control_the_index_holds_what_the_control_shows(video, store, control):
    """A grey or frozen video shows no red: the query finds nothing better than any frame,
    so the times it returns say nothing about where the real event is."""
    path, config, decoded = video
    runner = ToolRunner(resolve_tools(["seek_video_frames"]))
    ctx = ToolContext(
        media=MediaRef(path=str(path)),
        video=decoded,
        config=config,
        control=control,
        control_key="r",
    )
    outcome = runner.run(
        ToolCall(raw="", name="seek_video_frames", arguments={"query": "red", "num_frames": 2}),
        ctx,
    )
    assert outcome.ok, outcome.text
    index = store.get(ctx)
    assert torch.all(index.embeddings[:, 0] == 0)  # no frame of the index is red
