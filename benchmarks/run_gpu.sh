#!/usr/bin/env bash
# The recorded GPU run: tunes the direct solver further on AlexNet layers 2 and 5 into a copy of the system
# perf DB, then measures every forward layer set against cuDNN, then the fusion benchmark.
# Usage: benchmarks/run_gpu.sh OUT_DIR   (backward directions: see docs/benchmarks.md for their command)
set -uo pipefail
out=$1
mkdir -p "$out"
cp miopy/data/system_perf.db "$out/system_perf.db"
export MIOPY_SYSTEM_DB_PATH="$out/system_perf.db"
tune() { timeout 200 python3 -m miopy.tuning.build_system_db --out "$out/system_perf.db" --merge --jobs 12 \
           --networks alexnet -n 128 -F 1 -S ConvDirectLocal "$@"; }
tune --layers conv2 --strategy local --budget 40
tune --layers conv5 --strategy random --budget 60
timeout 240 python3 benchmarks/suite.py --sets alexnet,boda,resnet50,vgg16 --directions F --iters 10 \
  --out "$out/h200-forward.json" | cut -c1-160
timeout 120 python3 benchmarks/fusion.py --batch 32 --out "$out/h200-fusion.json" | tail -3
