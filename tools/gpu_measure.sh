#!/usr/bin/env bash
# The one prepared GPU measurement: `spectable bench` on CUDA, Llama-3.1-8B target + Llama-3.2-1B
# draft, bf16, random weights (batch-1 decode, verify(γ+1 = 5), c, batch sweep 1/4/16/64 at 4,096 context,
# speculative end to end, copy bandwidth) -> assets/measurements/h200-llama-3.1-8b.json, plus a copy, the log
# and a check against the bars it is held to in $OUT when that is set (the device runner's output folder).
#
# Runs from the repository root with the machine's own python + torch (no install; only torch is needed:
# the bench imports nothing of the window, the scenes or numpy). Everything is overridable for a CPU rehearsal:
#   DEVICE=cpu TARGET=tiny DRAFT=tiny-draft DTYPE=fp32 BATCHES=1,2 CONTEXT=64 TOKENS=16 \
#     RESULT=/tmp/m.json OUT=/tmp/out tools/gpu_measure.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DEVICE=${DEVICE:-cuda}
TARGET=${TARGET:-llama-3.1-8b}
DRAFT=${DRAFT:-llama-3.2-1b}
DTYPE=${DTYPE:-bf16}
GAMMA=${GAMMA:-4}
BATCHES=${BATCHES:-1,4,16,64}
CONTEXT=${CONTEXT:-4096}
TOKENS=${TOKENS:-128}
COMPILE=${COMPILE:-auto}
LIMIT_S=${LIMIT_S:-520}          # leave the device runner's 600 s limit room to copy the files back
RESULT=${RESULT:-assets/measurements/h200-llama-3.1-8b.json}
PY=${PYTHON:-python3}
OUT=${OUT:-}

LOG=/dev/null
if [ -n "$OUT" ]; then mkdir -p "$OUT"; LOG="$OUT/gpu_measure.log"; fi
say() { echo "[gpu_measure $(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

say "python: $($PY -c 'import sys; print(sys.version.split()[0])')"
say "torch: $($PY -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())')"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv,noheader 2>&1 | tee -a "$LOG" >&2 || true
fi

export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/spectable-inductor}
mkdir -p "$(dirname "$RESULT")"

say "bench: $TARGET + $DRAFT, $DTYPE, γ=$GAMMA, batches $BATCHES at $CONTEXT context, $TOKENS tokens, on $DEVICE"
set +e
timeout "$LIMIT_S" "$PY" -m app.cli.llm bench --device "$DEVICE" --target "$TARGET" --draft "$DRAFT" \
  --dtype "$DTYPE" --gamma "$GAMMA" --batch "$BATCHES" --context "$CONTEXT" --tokens "$TOKENS" \
  --compile "$COMPILE" --out "$RESULT" 2> >(tee -a "$LOG" >&2) | tee -a "$LOG"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then say "bench failed (exit $rc)"; exit "$rc"; fi

# The bars (75 % of the weights-only roofline, verify(5)/verify(1) <= 1.10, c <= 0.25), each with how far it is from them.
"$PY" - "$RESULT" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
r = json.load(open(sys.argv[1]))
f = r["figures"]
checks = [("batch-1 decode, fraction of the weights-only roofline", f["decode_batch1"]["fraction_of_roofline"], ">=", 0.75),
          (f"verify({f['verify_cost']['tokens']})/verify(1)", f["verify_cost"]["ratio"], "<=", 1.10),
          ("c = draft/target", f["draft_cost"]["c"], "<=", 0.25)]
print(f"device: {r['device']['name']}, torch {r['device']['torch']}, {r['dtype']}, fast path {r.get('fast_path')}")
for name, value, op, bar in checks:
    ok = value >= bar if op == ">=" else value <= bar
    print(f"{'PASS' if ok else 'SHORT'}  {name}: {value:.3f} (bar {op} {bar}; {'margin' if ok else 'short by'} "
          f"{abs(value - bar):.3f})")
PY
if [ -n "$OUT" ]; then cp "$RESULT" "$OUT/"; fi
say "written $RESULT"
