"""Serving frontier: Llama 3 70B with 2048-token prompts and 512-token
answers, on H100 and on TPU v5e (up to 16 chips each). scalemodel.plan_serve
searches the plans and batches; the frontier is the best tokens per second
per chip at each time per output token, and the circled point the best one
under a 50 ms per-token limit.

Prints the best plan of each and writes serving_frontier.png.

    PYTHONPATH=build/python python3 examples/serving_frontier.py
"""

import scalemodel as sm

results = []
for chip in ("h100", "tpu-v5e"):
    r = sm.plan_serve(model="llama3-70b", system=chip, prompt=2048, output=512,
                      max_chips=16, tpot_max="50ms")
    results.append(r)
    b = r.best
    if b is None:
        print(f"{chip:8} no plan meets 50 ms per token")
        continue
    print(f"{chip:8} {b.plan:10} batch {b.batch:4.0f}  "
          f"{1e3 * b.decode_step_time_s:5.1f} ms/token  "
          f"{b.tokens_per_s_per_chip:7.0f} tokens/s/chip  "
          f"{len(r.frontier)} frontier points")

sm.plot.frontier(*results, labels=["H100", "TPU v5e"],
                 title="Llama 3 70B serving: throughput against latency",
                 path="serving_frontier.png")
print("wrote serving_frontier.png")
