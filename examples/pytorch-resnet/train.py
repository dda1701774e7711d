"""A small ResNet trained with PyTorch on generated images: a gpubench workload example.

The data is made here (no download): each class is a fixed random pattern plus
noise, so the network really learns and the accuracy means something. It
prints MLPerf logging lines (`:::MLLOG`) and `GPUBENCH_METRICS` lines, the
two conventions gpubench reads (docs/workloads.md): a progress line every
METRICS_EVERY seconds (default 2) with the samples and training seconds so far,
which `gpubench bench` probes read, and the totals at the end. Sizes come from flags or
the environment (EPOCHS, BATCH_SIZE, SAMPLES, IMAGE_SIZE, WIDTH), so the spec
can scale it from a CPU smoke test to a GPU benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from torch import nn


def mllog(key, value=None, event_type="POINT_IN_TIME", **metadata):
    """One MLPerf logging line (the mlcommons/logging format) on stdout."""
    record = {
        "namespace": "",
        "time_ms": int(time.time() * 1000),
        "event_type": event_type,
        "key": key,
        "value": value,
        "metadata": {"file": "train.py", "lineno": 0, **metadata},
    }
    print(":::MLLOG " + json.dumps(record), flush=True)


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = (
            nn.Identity()
            if stride == 1 and cin == cout
            else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        )

    def forward(self, x):
        return torch.relu(self.body(x) + self.skip(x))


def resnet(width: int, classes: int) -> nn.Module:
    """ResNet-10-ish: a stem and four stages of one basic block each (He et al. 2015 layout)."""
    w = width
    return nn.Sequential(
        nn.Conv2d(3, w, 3, 1, 1, bias=False),
        nn.BatchNorm2d(w),
        nn.ReLU(inplace=True),
        Block(w, w, 1),
        Block(w, 2 * w, 2),
        Block(2 * w, 4 * w, 2),
        Block(4 * w, 8 * w, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8 * w, classes),
    )


def make_data(n: int, size: int, classes: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    patterns = torch.randn(classes, 3, size, size, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    images = patterns[labels] + 1.5 * torch.randn(n, 3, size, size, generator=g)
    return images, labels


def main() -> None:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=int(env("EPOCHS", 3)))
    p.add_argument("--batch-size", type=int, default=int(env("BATCH_SIZE", 64)))
    p.add_argument("--samples", type=int, default=int(env("SAMPLES", 4096)))
    p.add_argument("--image-size", type=int, default=int(env("IMAGE_SIZE", 32)))
    p.add_argument("--width", type=int, default=int(env("WIDTH", 16)))
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--metrics-every", type=float, default=float(env("METRICS_EVERY", 2)))
    args = p.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    mllog("submission_benchmark", "pytorch-resnet")
    mllog("init_start", event_type="INTERVAL_START")
    x_train, y_train = make_data(args.samples, args.image_size, args.classes, args.seed)
    x_val, y_val = make_data(max(args.samples // 4, args.batch_size), args.image_size, args.classes, args.seed + 1)
    model = resnet(args.width, args.classes).to(device)
    if device.type == "cuda" and torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)  # one process, every visible GPU
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    mllog("global_batch_size", args.batch_size)
    mllog("seed", args.seed)
    mllog("init_stop", event_type="INTERVAL_END")

    mllog("run_start", event_type="INTERVAL_START")
    mllog("train_samples", args.samples)
    mllog("eval_samples", len(x_val))
    trained, train_seconds, accuracy, loss = 0, 0.0, None, None
    printed = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        mllog("epoch_start", event_type="INTERVAL_START", epoch_num=epoch)
        model.train()
        t0 = time.perf_counter()
        order = torch.randperm(args.samples)
        for i in range(0, args.samples, args.batch_size):
            idx = order[i : i + args.batch_size]
            xb, yb = x_train[idx].to(device, non_blocking=True), y_train[idx].to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()
            trained += len(idx)
            if time.perf_counter() - printed >= args.metrics_every:
                if device.type == "cuda":
                    torch.cuda.synchronize()  # count the steps that really ran
                printed = time.perf_counter()
                progress = {"samples": trained, "seconds": round(train_seconds + printed - t0, 3)}
                print("GPUBENCH_METRICS " + json.dumps(progress), flush=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        train_seconds += time.perf_counter() - t0
        mllog("epoch_stop", event_type="INTERVAL_END", epoch_num=epoch)
        model.eval()
        correct, total_loss = 0, 0.0
        with torch.no_grad():
            for i in range(0, len(x_val), args.batch_size):
                xb, yb = x_val[i : i + args.batch_size].to(device), y_val[i : i + args.batch_size].to(device)
                out = model(xb)
                total_loss += loss_fn(out, yb).item() * len(yb)
                correct += (out.argmax(1) == yb).sum().item()
        accuracy, loss = correct / len(x_val), total_loss / len(x_val)
        mllog("eval_accuracy", round(accuracy, 5), epoch_num=epoch)
        print(
            f"epoch {epoch}: val_acc={accuracy:.4f} val_loss={loss:.4f} {trained / train_seconds:.1f} samples/s",
            flush=True,
        )
    mllog("run_stop", event_type="INTERVAL_END", status="success")
    metrics = {
        "samples_per_second": round(trained / train_seconds, 3),
        "samples": trained,
        "seconds": round(train_seconds, 3),
        "accuracy": accuracy,
        "loss": loss,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "device": str(device),
        "torch": torch.__version__,
    }
    print("GPUBENCH_METRICS " + json.dumps(metrics), flush=True)


if __name__ == "__main__":
    main()
