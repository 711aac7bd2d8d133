#!/bin/bash
# The device checks of one session on a lent GPU machine (torch and transformers, none of the book's other
# packages), run from the repository root there, with what `make device-bundle` wrote into .device/:
# the throughput benchmark (compiled, then eager), GPU correctness of every registered model, the two regimes'
# cost table (8 models, each index also held in GPU memory: 141 s on an H200), and where TK-2's time goes. The whole
# script took 452 s on an H100 (2026-11-27, regimes without --resident, cut at 140 s): a lent machine's 15 minutes
# hold one run and a short second one. The machine has torch, transformers, numpy, pandas and scipy, not ir_measures:
# what the benchmarks import must not need it.
# Results go to $OUT (the device tool's folder; default: .device/out).
set -u
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TKBOOK_MINILM_COPY=.device/minilm HF_HUB_OFFLINE=1
tar xzf .device/data.tar.gz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/nvidia-smi.txt"
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name())"
timeout 170 python3 -m benchmarks.throughput --device cuda --dtype bfloat16 --batch-sizes 1024 4096 \
  --models tk2 bert-base --compile --target-seconds 0.5 --repetitions 3 --max-latency-seconds 20 \
  --out "$OUT/compiled.json" 2>&1 | grep -v "timing:" | tee "$OUT/compiled.log"
timeout 110 python3 -m benchmarks.gpu_check --device cuda --out "$OUT/models.json" 2>&1 | grep -v "Loading weights" |
  tee "$OUT/models.log"
timeout 200 python3 -m benchmarks.regimes --device cuda --resident --pq 64 \
  --models bert-cat tk-bert6 tk-bert6-d64 tk-bert6-d32 colbert prettr tk2 bi-encoder --out "$OUT/regimes.json" 2>&1 | grep -v "it/s\|s/it" |
  tee "$OUT/regimes.log"
timeout 40 python3 -m benchmarks.op_profile --device cuda --model tk2 --dtype bfloat16 --batch-size 1024 \
  --out "$OUT/tk2-profile.txt" > /dev/null 2>&1
timeout 100 python3 -m benchmarks.throughput --device cuda --dtype bfloat16 float32 --batch-sizes 1024 4096 \
  --models tk1 tk2 tk3 bert-base --target-seconds 0.5 --repetitions 3 --max-latency-seconds 20 \
  --out "$OUT/eager.json" 2>&1 | grep -v "timing:" | tee "$OUT/eager.log"
