"""Chip comparison: the same job, Llama 3 70B trained at sequence length
4096 with a 4Mi-token batch on 256 chips, planned on five accelerators.
For each chip the best plan the search finds (scalemodel.plan_train) gives
the step time, MFU and memory per chip.

Writes chip_comparison.png (step-time breakdown of each chip's best plan)
and chip_comparison_memory.png (its memory per chip against HBM), and
roofline_h100.png (the H100's roofline with three matmul shapes).

    PYTHONPATH=build/python python3 examples/chip_comparison.py
"""

import scalemodel as sm

SYSTEMS = {
    "h100": "h100:8x32",
    "b200": "b200:8x32",
    "tpu-v5e": "tpu-v5e:16x16",
    "tpu-v5p": "tpu-v5p:4x8x8",
    "tpu-v6e": "tpu-v6e:16x16",
}

best = {}
for chip, system in SYSTEMS.items():
    result = sm.plan_train(model="llama3-70b", system=system,
                           batch_tokens="4Mi", seq=4096, top=1)
    if result.best is None:
        print(f"{chip:8} nothing fits")
        continue
    best[chip] = result.best
    b = result.best
    print(f"{chip:8} {b.key:60} {b.step_time_s:7.2f} s  MFU "
          f"{100 * b.mfu:3.0f}%  {b.memory_per_chip.total_bytes / 1e9:5.1f} GB")

sm.plot.step_time(list(best.values()), labels=list(best),
                  title="Llama 3 70B, 4Mi tokens, 256 chips: best plan",
                  path="chip_comparison.png")
sm.plot.memory(list(best.values()), labels=list(best),
               title="Memory per chip of each best plan",
               path="chip_comparison_memory.png")
ops = [sm.roofline(chip="h100", matmul=m)
       for m in ("64x8192x8192", "512x8192x8192", "4096x8192x8192")]
sm.plot.roofline("h100", ops, path="roofline_h100.png")
print("wrote chip_comparison.png, chip_comparison_memory.png, "
      "roofline_h100.png")
