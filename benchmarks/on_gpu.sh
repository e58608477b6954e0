#!/bin/bash
# Run mlc's GPU tests and GPU benchmarks on a machine with an NVIDIA GPU and CUDA (used with a
# lent GPU machine that has Python, numpy, pytest and hypothesis but maybe not llvmlite: wheels
# in .whl/ are installed to /tmp/site first). Writes logs under ${OUT:-/tmp/mlc-gpu}.
#   benchmarks/on_gpu.sh [tests|bench|all|quick] [extra pytest args...]
# quick: the one-shot check for a short loan (about 8 minutes, each step bounded by timeout):
# the device-side index checks and the real-GPU tests, the performance model against the GPU
# at 1024 and 2048, the tuned GEMM against cuBLAS at 2048 and 4096; copy $OUT's files into
# benchmarks/results/ with the GPU's name (nvidia-smi -L in env.txt).
set -u
OUT=${OUT:-/tmp/mlc-gpu}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 --version
  python3 -c "import llvmlite, numpy; print('llvmlite', llvmlite.__version__, 'numpy', numpy.__version__)"
  python3 -c "from mlc.target.cuda import nvrtc; from mlc.runtime import cuda_driver as d; print('nvrtc', nvrtc.available(), nvrtc.version() if nvrtc.available() else '', 'driver', d.available(), d.context().arch() if d.available() else '')"
} 2>&1 | tee "$OUT/env.txt"
what=${1:-tests}; shift || true
if [ "$what" = quick ]; then
  timeout 180 python3 -m pytest -p no:cacheprovider -q -o addopts="-ra" -x \
    tests/gpu/test_device_index_check.py tests/gpu/test_real_gpu.py "$@" 2>&1 \
    | tee "$OUT/tests_quick.txt" | tail -30
  timeout 150 python3 benchmarks/gpu_model.py --sizes 1024,2048 --out "$OUT/gpu_model.md" \
    2>&1 | tail -30
  timeout 180 python3 benchmarks/gpu_gemm.py --sizes 2048,4096 --out "$OUT/gpu_gemm.txt" \
    2>&1 | tail -20
  exit 0
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
  python3 -m pytest -p no:cacheprovider -q -o addopts="-ra" --timeout=300 tests/gpu \
    tests/target/test_cuda.py tests/runtime/test_cuda_sim.py tests/gpu_schedules "$@" 2>&1 \
    | tee "$OUT/tests.txt" | tail -80
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 benchmarks/gpu_gemm.py --out "$OUT/gpu_gemm.txt" 2>&1 | tail -40
  if [ -f benchmarks/gpu_model.py ]; then
    python3 benchmarks/gpu_model.py --out "$OUT/gpu_model.txt" 2>&1 | tail -60
  fi
fi
