#!/usr/bin/env bash
# The whole test suite, the fault suite (its column of docs/reliability.md), the big-memory tensors and the
# slow fuzzing on the GPU machine, under NVIDIA's OpenCL. One command, from the root of a fresh copy of the
# repository with .whl/ carried (../shared/fetch_gpu_wheels.sh fills it on the CPU machine):
#
#     benchmarks/gpu_tests.sh [OUT_DIR] [PARTS]       # defaults: $OUT (the device tool's) or benchmarks/results;
#                                                     # PARTS suite,bigmem,slow (see benchmarks.gpu_tests)
#
# It installs the wheels the machine lacks into a private directory, names NVIDIA's OpenCL library in an ICD
# file of its own (GPU_NOTES.md), keeps miopy's caches and DBs in temporary directories, and runs
# python -m benchmarks.gpu_tests. OUT_DIR receives gpu-tests-<device>.json (counts, device, times), the fault
# suite's reliability-<device>.json and each part's log. Back on the CPU machine, copy the two JSON files into
# benchmarks/results/ (name them in benchmarks/results/catalog.json) and run `python -m benchmarks.report`.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-benchmarks/results}}
parts=${2:-suite,bigmem,slow}
work=$(mktemp -d)
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-deps --no-index --target "$work/site" .whl/*.whl
  export PYTHONPATH="$work/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
if [ -e /dev/nvidia0 ] && [ -z "${OCL_ICD_VENDORS:-}" ]; then
  mkdir -p "$work/icd" && echo libnvidia-opencl.so.1 > "$work/icd/nvidia.icd"
  export OCL_ICD_VENDORS="$work/icd"
fi
mkdir -p "$work/db" "$out"
export MIOPY_CACHE_DIR="$work/cache" MIOPY_USER_DB_PATH="$work/db/user.db"
python3 -m benchmarks.gpu_tests --out "$out" --parts "$parts"
