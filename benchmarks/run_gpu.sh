#!/usr/bin/env bash
# The commands that produced benchmarks/results/h200-suite-*.json, h200-fusion.json and h200-cold-find.json (run
# on the GPU machine from the repo root, with the shipped system perf DB; tuning that fed that DB:
# benchmarks/tune_gpu.sh). Usage: benchmarks/run_gpu.sh OUT_DIR; copy the files into benchmarks/results/, then
# python -m benchmarks.report (docs/results/conv-fp32.md and fusion.md).
set -uo pipefail
out=$1
mkdir -p "$out"
timeout 300 python3 -m benchmarks.suite --sets alexnet,boda,resnet50,vgg16 --directions F --iters 10 \
  --out "$out/h200-suite-forward.json"
timeout 330 python3 -m benchmarks.suite --sets alexnet,resnet50,vgg16 --directions B,W --iters 5 \
  --out "$out/h200-suite-backward.json"
timeout 120 python3 -m benchmarks.fusion --batch 32 --out "$out/h200-fusion.json"
timeout 80 python3 -m benchmarks.cold_find --json "$out/h200-cold-find.json"
