"""The demo uses the checkpoint's run settings (as eval does), names the model by its run,
and on a quickstart-like model its first example gets a parsed answer in the browser."""

from __future__ import annotations

import shutil

import pytest
import torch

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.config.run import run_model_name, save_run_config
from videorl.demo.inference import Settings, ask, prepare
from videorl.inference import RunSettings
from videorl.video.decode import VideoConfig

from .test_app import CHROMIUM, needs_browser

QUICKSTART_VIDEO = {"think": False, "fps": 2.0, "max_frames": 32, "min_pixels": 3136}


def quickstart_run(model_dir, folder):
    """A run folder as `videorl train quickstart` leaves it: config.yaml and final/."""
    shutil.copytree(model_dir, folder / "final")
    config = load_config(resolve_config_path("quickstart"), [f"model.path={model_dir}"])
    save_run_config(config, folder)
    return folder / "final"


def fit_to_answer(final, example, steps: int = 120) -> None:
    """Teach the tiny model the annotation of `example` under its run's settings (what 200
    quickstart steps do for the first example, in a few seconds): greedy decoding then
    answers it."""
    from videorl.models.loading import load_model
    from videorl.models.logprobs import rows_logprobs
    from videorl.rewards.annotation import serialize_annotation
    from videorl.trainer.checkpoint import save_model_folder

    loaded = load_model(final)
    settings = run_settings(final)
    prompt = prepare(loaded, example.video_path, None, settings, example.record).prompt
    text = serialize_annotation(example.record, think=settings.think)
    ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"] + [loaded.eos_token_ids[0]]
    target = torch.tensor(ids)
    optimizer = torch.optim.Adam(loaded.model.parameters(), lr=3e-3)
    loaded.model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: a second thread only waits on a busy machine
    try:
        for _ in range(steps):
            logp, _, mask = rows_logprobs(loaded, [prompt], [target], temperature=1.0)
            loss = -(logp * mask).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    save_model_folder(loaded, final)


def run_settings(final, **overrides) -> Settings:
    """The demo's settings for a checkpoint, as `videorl demo` makes them."""
    return Settings.of_run(RunSettings.from_checkpoint(final), **overrides)


def test_settings_come_from_the_run(tiny_model_dir, tmp_path):
    final = quickstart_run(tiny_model_dir("qwen2_5_vl"), tmp_path / "quick")
    settings = run_settings(final, max_duration=30.0)
    assert settings.run.source == tmp_path / "quick" / "config.yaml"
    video = settings.run.video
    shown = {"think": settings.think, "fps": settings.fps, "max_frames": settings.max_frames}
    assert {**shown, "min_pixels": video.min_pixels} == QUICKSTART_VIDEO
    assert (video.max_pixels, settings.max_duration) == (12544, 30.0)
    config = settings.video_config(factor=32)
    assert (config.min_frames, config.max_pixels, config.factor) == (4, 12544, 28)
    assert run_model_name(final) == "quick/final"


def test_without_a_run_the_defaults_are_evals(tmp_path):
    settings = run_settings(tmp_path)
    video = VideoConfig()
    assert settings.run.source is None and settings == Settings() and settings.think is False
    config = settings.video_config(factor=28)
    assert (config.fps, config.max_frames, config.min_pixels, config.max_pixels) == (
        video.fps,
        video.max_frames,
        video.min_pixels,
        video.max_pixels,
    )
    assert run_model_name(tmp_path) == tmp_path.name


@pytest.fixture(scope="module")
def fitted(tiny_model_dir, examples, tmp_path_factory):
    from videorl.models.loading import load_model

    final = quickstart_run(tiny_model_dir("qwen2_5_vl"), tmp_path_factory.mktemp("run") / "quick")
    fit_to_answer(final, examples[0])
    return final, load_model(final)


@pytest.mark.slow
def test_fitted_model_answers_its_example_in_process(fitted, examples):
    final, loaded = fitted
    example = examples[0]
    settings = run_settings(final)
    question = ask(loaded, example.video_path, None, settings, example.record)
    truth = example.record.answer.windows[0]
    assert question.prediction.window == truth
    # The demo's old defaults (think on, default pixels) ask another prompt.
    old = Settings(think=True, max_frames=32)
    assert ask(loaded, example.video_path, None, old, example.record).prediction.window != truth


@pytest.mark.slow
@needs_browser
def test_first_example_gets_a_parsed_answer_in_the_browser(fitted, examples):
    from playwright.sync_api import expect, sync_playwright

    from videorl.demo.app import running_demo

    final, loaded = fitted
    settings = run_settings(final)
    with (
        running_demo(loaded, title=run_model_name(final), settings=settings) as demo,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(demo.url)
        expect(page.get_by_text("Ask quick/final about a video")).to_be_visible()
        page.get_by_label("Example").click()
        page.get_by_role("option").first.click()
        expect(page.locator("#query textarea")).to_have_value(examples[0].record.problem)
        page.locator("#ask").click()
        answer = page.locator("#answer")
        expect(answer).to_contain_text("Answer:", timeout=120_000)
        expect(answer).to_contain_text(f"{examples[0].record.answer.windows[0][0]:g}")
        expect(answer).not_to_contain_text("No parseable answer")
        expect(page.locator("#timeline img")).to_be_visible()
        browser.close()
