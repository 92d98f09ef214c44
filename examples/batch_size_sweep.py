"""Batch-size sweep: Llama 3 8B trained on 32 H100s (4 nodes of 8) at
sequence length 8192, for global batches from 256Ki to 4Mi tokens and
tensor parallelism 1, 2 and 8 (FSDP over the remaining chips).

Prints the table and writes batch_size_sweep.png (MFU against batch, one
line per TP degree) in the current directory.

    PYTHONPATH=build/python python3 examples/batch_size_sweep.py
"""

import scalemodel as sm

BATCHES = ["256Ki", "512Ki", "1Mi", "2Mi", "4Mi"]

table = sm.sweep(sm.train, model="llama3-8b", system="h100:8x4", seq=8192,
                 batch=BATCHES, tp=[1, 2, 8], fill="fsdp")

print(f"{'batch':>6} {'plan':>12} {'step (s)':>9} {'MFU':>5} "
      f"{'GB/chip':>8}  bottleneck")
for row in table:
    if row.error:
        print(f"{row.batch:>6} {'':>12} {row.error}")
        continue
    print(f"{row.batch:>6} {row['inputs.plan']:>12} {row.step_time_s:9.3f} "
          f"{100 * row.mfu:4.0f}% "
          f"{row['memory_per_chip.total_bytes'] / 1e9:8.1f}  {row.bottleneck}")

sm.plot.sweep(table, x="batch", y="mfu", group="tp",
              title="Llama 3 8B on 32 H100: MFU against global batch",
              path="batch_size_sweep.png")
print("wrote batch_size_sweep.png")
