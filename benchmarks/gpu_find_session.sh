#!/bin/bash
# One device call of the find work (issue 17): a cold-find sweep (main's tree as the baseline when _before/
# holds it, then this tree serial and with parallel compile), then the resumable find-record builder into
# $OUT/system_perf.db (started from the shipped miopy/data/system_perf.db), stopped at a deadline.
#   bash benchmarks/gpu_find_session.sh BUILD_SECONDS PER_SET [extra commands file]
set -u
BUILD=${1:-240}; PER_SET=${2:-1}; JOBS=${3:-1,12}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
BEFORE=(); [ -d _before/miopy ] && BEFORE=(--before _before)
python3 -m benchmarks.cold_find_sweep --per-set "$PER_SET" --directions 1,2,4 --jobs "$JOBS" "${BEFORE[@]}" \
    --timeout 45 --json "$OUT/cold_find_gpu.json" > "$OUT/cold_find.log" 2>&1
cp miopy/data/system_perf.db "$OUT/system_perf.db"
[ "$BUILD" -gt 30 ] && MIOPY_CACHE_DIR=/tmp/mc_build timeout "$BUILD" python3 -m miopy.cli.build_system_db --find \
    --out "$OUT/system_perf.db" --networks alexnet,resnet50,vgg16,googlenet,mobilenet,boda -F 0 --jobs 12 \
    --deadline $((BUILD - 25)) > "$OUT/build.log" 2>&1
echo "builder exit $?" >> "$OUT/build.log"
tail -3 "$OUT/cold_find.log"; tail -4 "$OUT/build.log"
