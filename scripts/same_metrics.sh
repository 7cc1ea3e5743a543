#!/usr/bin/env bash
# Behaviour snapshot for refactors: a shortened quickstart (SFT then OraRL, eval with video
# controls) and all eight families for a few GRPO steps, every metric into one JSON file.
# Run it before and after a change that must not change behaviour, then compare:
#   scripts/same_metrics.sh /tmp/before && (change) && scripts/same_metrics.sh /tmp/after
#   python scripts/same_metrics.py /tmp/before/metrics.json /tmp/after/metrics.json
set -euo pipefail
D=${1:?usage: scripts/same_metrics.sh OUT_DIR}
PY=${PY:-python}
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
V="$PY -m videorl"
mkdir -p "$D"
$V make-tiny "$D/model" --arch qwen3_vl --vision-warmup 20 --overwrite
$V synth --out "$D/tg" --families temporal_grounding --tg-events appear --n 32 --val 8 --seed 0 --overwrite
$V synth --out "$D/all" --families all --n 4 --val 2 --seed 0 --overwrite
QS=(model.path="$D/model" data.train="$D/tg/train.jsonl" data.val="$D/tg/val.jsonl")
$V sft sft_quickstart "${QS[@]}" trainer.steps=12 trainer.save_every=12 trainer.val_every=12 \
  trainer.output_dir="$D/sft" --overwrite
$V train quickstart "${QS[@]}" model.path="$D/sft/final" trainer.steps=4 trainer.save_every=4 \
  trainer.val_every=4 trainer.output_dir="$D/orarl" --overwrite
$V eval --model "$D/orarl/final" --benchmark "$D/tg/val.jsonl" --controls frozen,reversed \
  --out "$D/eval-tg" --overwrite
ALL=(model.path="$D/model" data.train="$D/all/train.jsonl" data.val="$D/all/val.jsonl"
  "data.families=[temporal_grounding,spatial_grounding,segmentation,tracking,spatio_temporal_grounding,video_qa,spatial_intelligence,math]")
$V train quickstart "${ALL[@]}" algorithm.estimator=grpo algorithm.annotation_rows=false \
  algorithm.pruning.enabled=false rollout.n=4 data.prompts_per_step=8 trainer.steps=3 \
  trainer.save_every=3 trainer.val_every=3 trainer.output_dir="$D/all-grpo" --overwrite
$V eval --model "$D/all-grpo/final" --benchmark "$D/all/val.jsonl" --controls frozen \
  --out "$D/eval-all" --overwrite
$PY "$(dirname "$0")/same_metrics.py" --collect "$D"
