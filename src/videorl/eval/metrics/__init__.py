"""Evaluation metrics of docs/methods.md#evaluation-metrics, one module per kind of answer.

- `temporal`: temporal grounding R1@{0.3, 0.5, 0.7} and mIoU.
- `boxes`: spatial grounding Acc@{0.5, 0.7, 0.9} and mIoU, tracking AO and SR@0.5,
  spatio-temporal grounding mean tIoU / sIoU and their @0.5 rates.
- `masks`: segmentation J, F (boundary F-measure), J&F, gIoU and cIoU.
- `choice`: accuracy, macro accuracy over question types, MRA.

Per-sample functions are pure functions of numbers and typed answers; `summarize*`
functions turn per-sample values into the reported numbers, in percent.
"""
