"""videorl.eval: benchmarks, the field's metrics (METHODS.md section 5), reports and plots.

    videorl eval --model CKPT --benchmark FILE|NAME [--video-root DIR] [--out DIR]
    videorl eval --endpoint URL --served-model NAME --benchmark ...   # vLLM, videorl serve
    videorl eval --predictions PREDS.jsonl --benchmark ...            # score existing answers
    videorl eval --compare A B                                        # delta table B - A
    videorl serve --model CKPT [--port 8000]                          # OpenAI-compatible

Modules (one concept each):
- `benchmarks`: named VTG benchmarks (Charades-STA, ActivityNet Captions, QVHighlights,
  TVGBench) -> expected annotation files; any data file for the other families.
- `parsing`: lenient answer parsing for evaluation (separate from the strict training
  parsers in `videorl.rewards`).
- `metrics.temporal`, `metrics.boxes`, `metrics.masks`, `metrics.choice`: the formulas.
- `scoring`: one response -> `SampleResult`; per-family summaries and breakdowns.
- `predictions`: the resumable `predictions.jsonl`.
- `backends` (HF engine), `openai_backend` (chat-completions client), `server` (`serve`).
- `runner`: `evaluate(settings, backend=... | predictions=...)` writes predictions.jsonl,
  metrics.json, samples.jsonl, plots/*.png and report.md.
- `report`, `plots`, `compare`, `commands` (the CLI commands).

Nothing is imported here, so that `videorl --help` stays fast.
"""
