#!/usr/bin/env bash
# The commands that produced benchmarks/results/h200-*.json (run on the GPU machine from the repo root,
# with the shipped system perf DB; tuning that fed that DB: benchmarks/tune_gpu.sh).
# Usage: benchmarks/run_gpu.sh OUT_DIR, then: python benchmarks/report.py OUT_DIR/h200-*.json
set -uo pipefail
out=$1
mkdir -p "$out"
timeout 300 python3 benchmarks/suite.py --sets alexnet,boda,resnet50,vgg16 --directions F --iters 10 \
  --out "$out/h200-forward.json"
timeout 330 python3 benchmarks/suite.py --sets alexnet,resnet50,vgg16 --directions B,W --iters 5 \
  --out "$out/h200-backward.json"
timeout 120 python3 benchmarks/fusion.py --batch 32 --out "$out/h200-fusion.json"
timeout 80 python3 benchmarks/cold_find.py --json "$out/h200-cold-find.json"
