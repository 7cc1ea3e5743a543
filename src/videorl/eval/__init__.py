"""videorl.eval: benchmarks, the field's metrics (docs/methods.md#evaluation-metrics), reports and
plots.

    videorl eval --model CKPT --benchmark FILE|NAME [--video-root DIR] [--out DIR]
    videorl eval --endpoint URL --served-model NAME [--checkpoint CKPT | --model-type T] \
        --benchmark ...                                               # vLLM, videorl serve
    videorl eval --predictions PREDS.jsonl --benchmark ...            # score existing answers
    videorl eval --compare A B                                        # delta table B - A

A checkpoint is prompted with the settings of the run that wrote it
(`inference.RunSettings`); `videorl serve` lives in `videorl.serve`.

Modules (one concept each):
- `benchmarks`: named VTG benchmarks (Charades-STA, ActivityNet Captions, QVHighlights,
  TVGBench) -> expected annotation files; any data file for the other families.
- `parsing`: lenient answer parsing for evaluation (separate from the strict training
  parsers in `videorl.rewards`).
- `metrics.temporal`, `metrics.boxes`, `metrics.masks`, `metrics.choice`: the formulas.
- `scoring`: one response -> `SampleResult`; per-family summaries and breakdowns.
- `predictions`: the resumable `predictions.jsonl`.
- `backends` (HF engine), `openai_backend` (chat-completions client).
- `runner`: `evaluate(settings, backend=... | predictions=...)` writes predictions.jsonl,
  metrics.json, samples.jsonl, plots/*.png and report.md.
- `report`, `plots`, `compare`, `options` and `commands` (the CLI command).

Nothing is imported here, so that `videorl --help` stays fast.
"""
