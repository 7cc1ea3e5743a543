"""The demo app: in headless Chromium on the tiny model, its temporary folder, its command."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from videorl.cli import app as cli
from videorl.data.families import Family
from videorl.demo.inference import Question, Settings

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium")


def missing(modules: tuple[str, ...], chromium: bool) -> str | None:
    """Why a test cannot run here, or None (CI installs gradio, playwright and chromium)."""
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install '.[demo]')"
    if chromium and CHROMIUM is None:
        return "the Debian chromium package is not installed (apt-get install chromium)"
    return None


BROWSER_MISSING = missing(("gradio", "playwright"), chromium=True)
GRADIO_MISSING = missing(("gradio",), chromium=False)
needs_browser = pytest.mark.skipif(BROWSER_MISSING is not None, reason=str(BROWSER_MISSING))
needs_gradio = pytest.mark.skipif(GRADIO_MISSING is not None, reason=str(GRADIO_MISSING))


@pytest.fixture(scope="module")
def page(demo):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        tab = browser.new_page(viewport={"width": 1400, "height": 1100})
        tab.set_default_timeout(60_000)
        yield tab
        browser.close()


@pytest.mark.slow
@needs_browser
def test_example_answer_and_timeline_appear_in_the_browser(demo, page, examples):
    from playwright.sync_api import expect

    assert demo.url.startswith("http://127.0.0.1:") and demo.share_url is None
    page.goto(demo.url)
    example = examples[0]  # the demo makes the same examples (fixed seed)
    start, end = example.record.answer.windows[0]
    page.get_by_label("Example").click()
    page.get_by_role("option", name=example.label).click()
    expect(page.locator("#query textarea")).to_have_value(example.record.problem)
    page.locator("#ask").click()
    answer = page.locator("#answer")
    expect(answer).to_contain_text(f"Ground truth: {start:g} s to {end:g} s", timeout=120_000)
    expect(answer).to_contain_text("reward")
    timeline = page.locator("#timeline img")
    expect(timeline).to_be_visible()
    assert timeline.evaluate("img => img.complete && img.naturalWidth") == 800
    expect(page.locator("#frames img")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "demo_temporal_grounding.png", full_page=True)


@pytest.mark.slow
@needs_browser
def test_uploaded_broken_video_gets_a_message_and_stays_in_the_demo_folder(demo, page, tmp_path):
    from playwright.sync_api import expect

    broken = tmp_path / "holiday.mp4"
    broken.write_bytes(b"not a video" * 100)
    page.goto(demo.url)
    page.locator("#video input[type=file]").set_input_files(str(broken))
    expect(page.locator('#video video[src*="holiday.mp4"]')).to_be_attached()  # uploaded
    page.locator("#query textarea").fill("the red circle is visible")
    page.locator("#ask").click()
    answer = page.locator("#answer")
    expect(answer).to_contain_text("Cannot answer: cannot read video holiday.mp4")
    expect(page.locator("#timeline img")).to_be_hidden()
    uploads = list((demo.folder / "uploads").rglob("holiday.mp4"))
    assert uploads, "the upload did not land in the demo's temporary folder"


@pytest.mark.slow
@needs_gradio
def test_demo_binds_locally_and_removes_its_folder(tiny_loaded):
    from videorl.demo.app import running_demo

    before = os.environ.get("GRADIO_TEMP_DIR")
    with running_demo(tiny_loaded, title="tiny") as running:
        assert running.url.startswith("http://127.0.0.1:")
        assert os.environ["GRADIO_TEMP_DIR"] == str(running.folder / "uploads")
        assert (running.folder / "examples" / "records.jsonl").is_file()
    assert not running.folder.exists()
    assert os.environ.get("GRADIO_TEMP_DIR") == before


def test_answer_question_without_video_or_with_a_broken_one(tiny_loaded, tmp_path):
    from videorl.demo.app import answer_question

    question = Question(Family("temporal_grounding"), "the red circle is visible")
    assert "Upload a video" in answer_question(tiny_loaded, None, question, Settings(), None)  # type: ignore[operator]  # the answer here is text
    broken = tmp_path / "clip.mp4"
    broken.write_bytes(b"\x00" * 64)
    message = answer_question(tiny_loaded, str(broken), question, Settings(), None)
    assert message.startswith("**Cannot answer:** cannot read video clip.mp4 (")


def test_example_truth_only_for_the_examples_own_question(examples):
    from videorl.demo.app import example_truth

    example = next(e for e in examples if e.record.family == Family("video_qa"))
    record = example.record
    assert example_truth(example, record.family, record.problem + " ", record.options) is example
    assert example_truth(example, record.family, "What shape is it?", record.options) is None
    assert example_truth(example, record.family, record.problem, record.options[::-1]) is None
    assert example_truth(example, Family("temporal_grounding"), record.problem, ()) is None
    assert example_truth(None, record.family, record.problem, record.options) is None


def test_command_binds_to_localhost_and_shares_only_when_asked(monkeypatch, tmp_path):
    import videorl.demo.app

    calls = []
    monkeypatch.setattr(videorl.demo.app, "serve", lambda model, **kw: calls.append((model, kw)))
    runner = CliRunner()
    assert runner.invoke(cli, ["demo", "--model", str(tmp_path)]).exit_code == 0
    shared_run = runner.invoke(
        cli, ["demo", "--model", str(tmp_path), "--share", "--auth", "u:p", "--port", "8000"]
    )
    assert shared_run.exit_code == 0
    (model, default), (_, shared) = calls
    assert model == tmp_path
    assert default["host"] == "127.0.0.1" and default["share"] is False
    assert shared["share"] is True and shared["port"] == 8000


@needs_gradio
def test_the_served_page_carries_the_phone_rules(demo):
    """The page the demo serves (its HTML with the embedded config) holds the phone rules."""
    import urllib.request

    from videorl.demo.style import PHONE_CSS, PHONE_WIDTH

    with urllib.request.urlopen(demo.url, timeout=30) as reply:
        html = reply.read().decode()
    assert f"@media (max-width: {PHONE_WIDTH}px)" in html
    rules = PHONE_CSS.split("{", 1)[1]
    assert "#timeline img" in rules and "overflow-x: auto" in rules


@pytest.mark.slow
@needs_browser
def test_the_demo_is_readable_at_phone_width(demo, page, examples):
    """At 375 px the page does not scroll sideways, and the timeline and frames keep their
    drawn size (13 px labels) inside boxes that scroll sideways instead of shrinking 0.4x."""
    from playwright.sync_api import expect

    browser = page.context.browser
    assert browser is not None
    with browser.new_page(viewport={"width": 375, "height": 812}) as phone:
        phone.set_default_timeout(60_000)
        phone.goto(demo.url)
        example = examples[0]
        phone.get_by_label("Example").click()
        phone.get_by_role("option", name=example.label).click()
        expect(phone.locator("#query textarea")).to_have_value(example.record.problem)
        expect(phone.locator("#video video")).to_have_count(1)
        phone.locator("#ask").click()
        expect(phone.locator("#answer")).to_contain_text("Ground truth", timeout=120_000)
        expect(phone.locator("#timeline img")).to_be_visible()
        expect(phone.locator("#frames img")).to_be_visible()
        sizes = phone.evaluate(
            """() => {
              const box = id => {
                const img = document.querySelector(`#${id} img`);
                const scroller = img.closest('.image-container');
                return {drawn: img.naturalWidth, shown: img.getBoundingClientRect().width,
                        box: scroller.clientWidth, scrolls: scroller.scrollWidth};
              };
              return {page: document.documentElement.scrollWidth, view: window.innerWidth,
                      timeline: box('timeline'), frames: box('frames'),
                      font: parseFloat(getComputedStyle(document.getElementById('answer')).fontSize)};
            }"""
        )
        ARTIFACTS.mkdir(exist_ok=True)
        phone.screenshot(path=ARTIFACTS / "demo_phone_375.png", full_page=True)
    assert sizes["page"] <= sizes["view"] == 375, sizes  # no sideways scroll of the page
    for drawing in ("timeline", "frames"):
        box = sizes[drawing]
        assert box["shown"] == box["drawn"] > box["box"], sizes  # drawn size, not shrunk
        assert box["box"] <= 375 and box["scrolls"] >= box["drawn"], sizes  # in a scroll box
    assert sizes["font"] >= 14, sizes
