#!/bin/bash
# The device checks of one session on a lent GPU machine (torch and transformers, none of the book's other
# packages), run from the repository root there, with what `make device-bundle` wrote into .device/:
# the throughput benchmark (compiled, then eager), GPU correctness of every registered model, the two regimes'
# cost table, and where TK-2's time goes. Results go to $OUT (the device tool's folder; default: .device/out).
set -u
OUT="${OUT:-.device/out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TKBOOK_MINILM_COPY=.device/minilm HF_HUB_OFFLINE=1
tar xzf .device/data.tar.gz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/nvidia-smi.txt"
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name())"
timeout 140 python3 -m benchmarks.throughput --device cuda --dtype bfloat16 --batch-sizes 1024 4096 \
  --models tk2 bert-base --compile --target-seconds 0.5 --repetitions 3 --max-latency-seconds 20 \
  --out "$OUT/compiled.json" 2>&1 | grep -v "timing:" | tee "$OUT/compiled.log"
timeout 110 python3 -m benchmarks.gpu_check --device cuda --out "$OUT/models.json" 2>&1 | grep -v "Loading weights" |
  tee "$OUT/models.log"
timeout 140 python3 -m benchmarks.regimes --device cuda --out "$OUT/regimes.json" 2>&1 | grep -v "it/s\|s/it" |
  tee "$OUT/regimes.log"
timeout 40 python3 -m benchmarks.op_profile --device cuda --model tk2 --dtype bfloat16 --batch-size 1024 \
  --out "$OUT/tk2-profile.txt" > /dev/null 2>&1
timeout 100 python3 -m benchmarks.throughput --device cuda --dtype bfloat16 float32 --batch-sizes 1024 4096 \
  --models tk1 tk2 tk3 bert-base --target-seconds 0.5 --repetitions 3 --max-latency-seconds 20 \
  --out "$OUT/eager.json" 2>&1 | grep -v "timing:" | tee "$OUT/eager.log"
