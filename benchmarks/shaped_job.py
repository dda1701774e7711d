"""A training job shaped like a real one, driven by sleep (so CPU load does not blur its truth).

Run by benchmarks/bench_accuracy.py as a task's `run`; every shape is an environment variable:

    RATE           steady samples/s once warm            BATCH        samples per step (one line each)
    TOTAL          samples to train                      SEED         noise seed
    SLOW_SECONDS   first phase's length (compilation, caching, autotuning) ...
    SLOW_SHARE     ... at this share of RATE
    EVAL_EVERY     samples between evaluations ...       EVAL_SECONDS ... each this long (and one at the end)
    EPOCH_SAMPLES  samples per epoch (its `epoch` field) EPOCH_END_SECONDS  pause at each epoch's end
    NOISE          each second's rate is RATE x uniform(1 - NOISE, 1 + NOISE)

Prints ``GPUBENCH_METRICS {"samples", "seconds", "epoch"}`` after every step, `seconds` on the wall
clock from its start (so its pauses show in the readings, as a job timing itself with time.time does).
"""

import json
import os
import random
import time

env = os.environ
rate, total, batch = float(env["RATE"]), float(env["TOTAL"]), float(env.get("BATCH", "100"))
slow_seconds, slow_share = float(env.get("SLOW_SECONDS", "0")), float(env.get("SLOW_SHARE", "1"))
eval_every, eval_seconds = float(env.get("EVAL_EVERY", "0")), float(env.get("EVAL_SECONDS", "0"))
epoch_samples, epoch_end = float(env.get("EPOCH_SAMPLES", "0")), float(env.get("EPOCH_END_SECONDS", "0"))
noise = float(env.get("NOISE", "0"))
rng = random.Random(int(env.get("SEED", "1")))

start = time.monotonic()
samples, train_seconds, factor, second = 0.0, 0.0, 1.0, -1
next_eval = eval_every or float("inf")
next_epoch = epoch_samples or float("inf")
due = start  # sleep to absolute times, so print and bookkeeping do not add up to drift


def pause(seconds):
    global due
    due += seconds
    time.sleep(max(0.0, due - time.monotonic()))


while samples < total:
    if int(train_seconds) != second:  # the noise holds for a second of training: bursts, not jitter
        second, factor = int(train_seconds), 1.0 + noise * (2 * rng.random() - 1) if noise else 1.0
    now_rate = rate * factor * (slow_share if train_seconds < slow_seconds else 1.0)
    step = min(batch, total - samples)
    pause(step / now_rate)
    train_seconds += step / now_rate
    samples += step
    epoch = int(samples // epoch_samples) + 1 if epoch_samples else 1
    line = {"samples": int(samples), "seconds": round(time.monotonic() - start, 3), "epoch": epoch}
    print("GPUBENCH_METRICS " + json.dumps(line), flush=True)
    if samples >= next_eval or samples >= total and eval_every:
        pause(eval_seconds)
        next_eval += eval_every
    if samples >= next_epoch:
        pause(epoch_end)
        next_epoch += epoch_samples
