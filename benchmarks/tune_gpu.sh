#!/usr/bin/env bash
# Tunes the benchmark layer sets on the GPU into a copy of the system perf DB: AlexNet (N=128, all
# directions), ResNet-50 and VGG-16 (N=32, forward), Boda's 43 (batch 5, forward). Usage: tune_gpu.sh OUT_DB [PART]
set -uo pipefail
out=$1; part=${2:-all}
[ -f "$out" ] || cp miopy/data/system_perf.db "$out"
# The fast strategy with a budget of seconds per layer (its point cap 128 rarely binds).
tune() { timeout 560 python3 -m miopy.cli.build_system_db --out "$out" --merge --strategy fast --budget 128 --jobs 12 "$@"; }
if [ "$part" = alexnet ] || [ "$part" = all ]; then
  for f in 1 2 4; do tune --networks alexnet -n 128 -F $f --time-budget 30; done
fi
if [ "$part" = rest ] || [ "$part" = all ]; then
  tune --networks resnet50,vgg16 -n 32 -F 1 --time-budget 12
  tune --networks boda -n 5 -F 1 --time-budget 8
fi
