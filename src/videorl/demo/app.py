"""`videorl demo`: a local gradio app to ask a checkpoint about a video.

Binds to 127.0.0.1 unless told otherwise; a public link only with `share=True`. Uploads and
the bundled examples live in one temporary folder that is removed when the demo stops.
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from videorl.config.run import run_model_name
from videorl.data.families import Family
from videorl.demo.examples import Example, demo_families, family_label, make_examples
from videorl.demo.guard import REFUSED, DemoLimits, PlainForbidden, client_video, parse_auth
from videorl.demo.inference import Question, Settings, ask
from videorl.demo.parts import FAMILY_DEMOS
from videorl.demo.style import PHONE_CSS
from videorl.demo.views import View, build_view
from videorl.errors import ConfigError, VideoRLError
from videorl.models.loading import LoadedModel

logger = logging.getLogger(__name__)

DEFAULT_LIMITS = DemoLimits()
UPLOAD_MAX_AGE_S = 3600  # uploads older than this are deleted while the demo runs
INTRO = """# videorl demo
Ask **{model}** about a video: upload one or pick an example, choose the task, type a query.
The answer is orange, the ground truth of an example green."""


@dataclass(frozen=True)
class RunningDemo:
    """A launched demo: its gradio app, local URL, public URL (with share) and folder."""

    blocks: Any
    url: str
    share_url: str | None
    folder: Path


@contextmanager
def upload_folder(path: Path) -> Iterator[None]:
    """Point gradio's upload cache at `path` for the duration of the demo."""
    previous = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(path)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("GRADIO_TEMP_DIR", None)
        else:
            os.environ["GRADIO_TEMP_DIR"] = previous


def example_truth(
    example: Example | None, family: Family, query: str, options: tuple[str, ...]
) -> Example | None:
    """The picked example, if the question is still the example's own (else its ground
    truth would not answer what was asked)."""
    if example is None:
        return None
    record, demo = example.record, FAMILY_DEMOS.get(family)
    same = (
        record.family == family
        and query.strip() == record.problem
        and (demo is None or not demo.options or options == record.options)
    )
    return example if same else None


def answer_question(
    loaded: LoadedModel,
    video: str | None,
    question: Question,
    settings: Settings,
    example: Example | None,
) -> View | str:
    """The view of the model's answer, or the message to show instead."""
    if not video:
        return "**Upload a video or pick an example first.**"
    picked = example_truth(example, question.family, question.text, question.options)
    record = picked.record if picked is not None else None
    try:
        return build_view(ask(loaded, video, question, settings, record), settings.think)
    except VideoRLError as err:  # the upload's cache path says nothing to the user
        return f"**Cannot answer:** {str(err).replace(video, Path(video).name)}"
    except Exception as err:
        logger.exception("demo: question failed")
        return f"**Something went wrong:** {type(err).__name__}: {err}"


# The generation settings a user can change in the app, in the order the question handler
# takes them, each with the type its widget's value is read as.
KNOBS: dict[str, type] = {
    "greedy": bool,
    "temperature": float,
    "top_p": float,
    "max_new_tokens": int,
    "fps": float,
    "max_frames": int,
    "think": bool,
}


@dataclass(frozen=True)
class Inputs:
    """The question's widgets and the generation settings' widgets (by `KNOBS` name)."""

    video: Any
    example: Any
    family: Any
    query: Any
    options: Any
    knobs: dict[str, Any]
    submit: Any


@dataclass(frozen=True)
class Outputs:
    """Where an answer is shown, in the order `shown_answer` returns their values."""

    answer: Any
    reasoning: Any
    response: Any
    timeline: Any
    frames: Any
    choices: Any

    def widgets(self) -> list[Any]:
        return [
            self.answer,
            self.reasoning,
            self.response,
            self.timeline,
            self.frames,
            self.choices,
        ]


def knob_settings(defaults: Settings, values: Sequence[Any]) -> Settings:
    """`defaults` with the widgets' values (in `KNOBS` order), each cast to its type."""
    return replace(
        defaults, **{name: cast(v) for (name, cast), v in zip(KNOBS.items(), values, strict=True)}
    )


def guarded_answer(
    loaded: LoadedModel,
    video: str | None,
    question: Question,
    settings: Settings,
    example: Example | None,
    roots: tuple[Path, ...],
    limits: DemoLimits,
) -> View | str:
    """`answer_question` for a video inside `roots` and settings within `limits`; else the
    refusal (one text whether or not the file exists)."""
    readable = client_video(video, roots, limits)
    refusal = limits.check(
        fps=settings.fps, max_frames=settings.max_frames, max_new_tokens=settings.max_new_tokens
    ) or (REFUSED if video and readable is None else None)
    return refusal or answer_question(loaded, readable, question, settings, example)


def shown_answer(view: View | str) -> tuple[Any, ...]:
    """The values of the `Outputs` widgets for a view (or a message: pictures hidden)."""
    import gradio as gr

    if isinstance(view, str):
        hidden = gr.update(value=None, visible=False)
        return view, "", "", hidden, hidden, gr.update(value="", visible=False)
    shown = view.pictures
    return (
        view.answer,
        view.reasoning,
        view.response,
        gr.update(value=shown.timeline, visible=shown.timeline is not None),
        gr.update(value=shown.frames, visible=shown.frames is not None),
        gr.update(value=shown.options or "", visible=shown.options is not None),
    )


def family_changed(value: str) -> tuple[Any, Any]:
    """The query's placeholder for the task; the options box only for video QA."""
    import gradio as gr

    demo = FAMILY_DEMOS[Family(value)]
    assert demo is not None, value
    return gr.update(placeholder=demo.placeholder), gr.update(visible=demo.options)


def knob_widgets(gr: Any, defaults: Settings, limits: DemoLimits) -> dict[str, Any]:
    """The generation settings' widgets, starting at `defaults` and bounded by `limits`."""

    def bounded(low: float, high: float, default: float, step: float, label: str) -> Any:
        return gr.Slider(low, high, min(default, high), step=step, label=label)

    with gr.Accordion("Generation settings", open=False):
        return {
            "greedy": gr.Checkbox(defaults.greedy, label="Greedy (off: sample)"),
            "temperature": gr.Slider(
                0.05, 2.0, defaults.temperature, step=0.05, label="Temperature (sampling)"
            ),
            "top_p": gr.Slider(0.05, 1.0, defaults.top_p, step=0.05, label="Top-p (sampling)"),
            "max_new_tokens": bounded(
                1, limits.max_new_tokens, defaults.max_new_tokens, 1, "Max new tokens"
            ),
            "fps": bounded(0.25, limits.max_fps, defaults.fps, 0.25, "Frames per second"),
            "max_frames": bounded(2, limits.max_frames, defaults.max_frames, 2, "Max frames"),
            "think": gr.Checkbox(defaults.think, label="Ask for reasoning (<think>)"),
        }


def input_column(
    gr: Any, examples: list[Example], defaults: Settings, limits: DemoLimits
) -> Inputs:
    """The left column: video, example, task, query, options, settings and the Ask button."""
    shown = demo_families()
    families = [(family_label(family), family.value) for family in shown]
    with gr.Column(scale=2):
        video = gr.Video(
            label="Video", sources=["upload"], include_audio=True, height=320, elem_id="video"
        )
        example = gr.Dropdown(
            [e.label for e in examples], value=None, label="Example", elem_id="example"
        )
        first = FAMILY_DEMOS[shown[0]]
        assert first is not None
        family = gr.Dropdown(families, value=shown[0].value, label="Task", elem_id="family")
        query = gr.Textbox(label="Query", elem_id="query", placeholder=first.placeholder)
        options = gr.Textbox(
            label="Options (one per line)", lines=4, visible=False, elem_id="options-input"
        )
        knobs = knob_widgets(gr, defaults, limits)
        submit = gr.Button("Ask", variant="primary", elem_id="ask")
    return Inputs(video, example, family, query, options, knobs, submit)


def output_column(gr: Any) -> Outputs:
    """The right column: answer, timeline, frames, options, reasoning and the raw reply."""
    picture = {"show_label": False, "type": "pil", "interactive": False, "visible": False}
    with gr.Column(scale=3):
        answer = gr.Markdown(elem_id="answer")
        timeline = gr.Image(label="Timeline", elem_id="timeline", **picture)
        frames = gr.Image(label="Frames", elem_id="frames", **picture)
        choices = gr.HTML(visible=False, elem_id="choices")
        reasoning = gr.Textbox(label="Reasoning", lines=4, interactive=False, elem_id="reasoning")
        with gr.Accordion("Raw reply", open=False):
            response = gr.Textbox(show_label=False, lines=4, interactive=False, elem_id="response")
    return Outputs(answer, reasoning, response, timeline, frames, choices)


def build_app(
    loaded: LoadedModel,
    examples: list[Example],
    defaults: Settings,
    title: str,
    roots: tuple[Path, ...] = (),
    limits: DemoLimits = DEFAULT_LIMITS,
) -> Any:
    """The gradio Blocks of the demo (not launched). A question reads a video only from
    `roots` (the demo's upload and example folders) and within `limits`."""
    import gradio as gr

    by_label = {e.label: e for e in examples}

    def pick(label: str | None) -> tuple[Any, ...]:
        example = by_label.get(label or "")
        if example is None:
            return gr.update(), gr.update(), gr.update(), gr.update()
        record = example.record
        return example.video_path, record.family.value, record.problem, "\n".join(record.options)

    def run(
        video: str | None, family: str, query: str, options: str, label: str, *knobs: Any
    ) -> tuple[Any, ...]:
        settings = knob_settings(defaults, knobs)
        option_lines = tuple(line.strip() for line in (options or "").splitlines() if line.strip())
        question = Question(Family(family), query or "", option_lines)
        example = by_label.get(label or "")
        return shown_answer(
            guarded_answer(loaded, video, question, settings, example, roots, limits)
        )

    with gr.Blocks(
        title="videorl demo",
        analytics_enabled=False,
        delete_cache=(UPLOAD_MAX_AGE_S, UPLOAD_MAX_AGE_S),
    ) as blocks:
        gr.Markdown(INTRO.format(model=title))
        with gr.Row():
            inputs = input_column(gr, examples, defaults, limits)
            outputs = output_column(gr)
        question = [inputs.video, inputs.family, inputs.query, inputs.options]
        inputs.example.change(pick, inputs.example, question)
        inputs.family.change(family_changed, inputs.family, [inputs.query, inputs.options])
        inputs.video.upload(lambda: None, None, inputs.example)
        knobs = list(inputs.knobs.values())
        inputs.submit.click(run, [*question, inputs.example, *knobs], outputs.widgets())
    return blocks


@contextmanager
def running_demo(
    loaded: LoadedModel,
    *,
    title: str,
    host: str = "127.0.0.1",
    port: int | None = None,
    share: bool = False,
    settings: Settings | None = None,
    limits: DemoLimits = DEFAULT_LIMITS,
    auth: tuple[str, str] | None = None,
) -> Iterator[RunningDemo]:
    """Launch the demo in the background; stop it and remove its folder on exit. A public
    `share` link needs `auth` (user, password)."""
    from starlette.middleware import Middleware

    if share and auth is None:
        parse_auth(None, share)  # raises: a public link without a password
    with tempfile.TemporaryDirectory(prefix="videorl-demo-") as work:
        folder = Path(work)
        with upload_folder(folder / "uploads"):
            examples = make_examples(folder / "examples")
            roots = (folder / "uploads", folder / "examples")
            blocks = build_app(loaded, examples, settings or Settings(), title, roots, limits)
            blocks.queue(default_concurrency_limit=1)
            _, url, share_url = blocks.launch(
                server_name=host,
                server_port=port,
                share=share,
                prevent_thread_lock=True,
                allowed_paths=[str(folder)],
                max_file_size=limits.max_upload_bytes,
                auth=auth,
                quiet=True,
                css=PHONE_CSS,
                app_kwargs={"middleware": [Middleware(PlainForbidden)]},
            )
            try:
                yield RunningDemo(blocks, url, share_url, folder)
            finally:
                blocks.close()


def stop_on_signal(_signum: int, _frame: Any) -> None:
    """Turn a termination signal into Ctrl+C, so that the temporary folder is removed."""
    raise KeyboardInterrupt


def serve(
    model: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    share: bool = False,
    max_duration: float = 600.0,
    device: str = "auto",
    auth: str | None = None,
    limits: DemoLimits = DEFAULT_LIMITS,
    early_exit: float | None = None,
) -> None:
    """Load the checkpoint and serve the demo until interrupted (Ctrl+C); questions are
    asked with the settings of the run that wrote it (`inference.RunSettings`); `early_exit`
    gates answer-twice responses (`Settings.early_exit`)."""
    credentials = parse_auth(auth, share)  # before the (slow) model load

    try:
        import gradio  # noqa: F401
    except ImportError:
        raise ConfigError(
            "videorl demo needs gradio; install it with pip install 'videorl[demo]'"
        ) from None
    from rich.console import Console

    from videorl.inference import RunSettings, load_for_inference

    loaded = load_for_inference(model, device)
    if not loaded.is_vision:
        raise ConfigError(
            f"model {model} ({loaded.model_type}) is text-only; the demo needs a "
            "vision-language checkpoint (e.g. Qwen2.5-VL)"
        )
    console = Console()
    settings = Settings.of_run(
        RunSettings.from_checkpoint(model), max_duration=max_duration, early_exit=early_exit
    )
    if settings.run.source is not None:
        console.print(f"demo settings: {settings.run.summary()}", highlight=False, soft_wrap=True)
    signal.signal(signal.SIGTERM, stop_on_signal)  # `kill` cleans up like Ctrl+C
    title = run_model_name(model)
    with running_demo(
        loaded,
        title=title,
        host=host,
        port=port,
        share=share,
        settings=settings,
        limits=limits,
        auth=credentials,
    ) as demo:
        console.print(
            f"videorl demo on [bold]{demo.url}[/]"
            + (f" and [bold]{demo.share_url}[/]" if demo.share_url else "")
            + "  (Ctrl+C to stop)"
        )
        demo.blocks.block_thread()
