#!/usr/bin/env bash
# The GPU proof kit: scripts/gpu/check.sh OUT [--cpu --tiny] [scripts/gpu/gpu_check.py options]
#
# On a bare GPU machine: installs the wheels in .whl/ (made by `make gpu-wheels`; not with
# --cpu) into a private folder, puts this checkout's src/ first on the path, and runs
# scripts/gpu/gpu_check.py, which writes OUT/gpu_check.json, OUT/gpu_check.md and OUT/gpu_check.log.
# PYTHON picks the interpreter (default python3). Exit status 0 when every part passed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/gpu/check.sh OUT [--cpu --tiny] [--parts tests,pruning,mfu,generation,step,async,long_video]" >&2
  exit 2
fi
OUT="$1"; shift
PY="${PYTHON:-python3}"
SITE="${VIDEORL_WHEEL_SITE:-${TMPDIR:-/tmp}/videorl-site}"
shopt -s nullglob
WHEELS=("$ROOT"/.whl/*.whl)
case " $* " in *" --cpu "*) WHEELS=() ;; esac  # the wheels are for the GPU image, not this venv
if [ ${#WHEELS[@]} -gt 0 ]; then
  echo "installing ${#WHEELS[@]} wheels from .whl/ into $SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${WHEELS[@]}" || { echo "error: the wheels in .whl/ did not install" >&2; exit 1; }
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$ROOT/src:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
"$PY" -c "import videorl.cli" || { echo "error: videorl does not import here (a missing package? see above; make gpu-wheels)" >&2; exit 1; }
exec "$PY" "$ROOT/scripts/gpu/gpu_check.py" "$OUT" "$@"
