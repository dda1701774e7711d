"""tqdm's bar, and bars built on it or drawn like it (Lightning's, Hugging Face Trainer's, Rich's).

    Epoch 1/2:  30%|███       | 3/10 [00:00<00:01,  5.02it/s]
      2%|▎         | 1/40 [00:00<00:05,  6.72it/s]
    Epoch 0:  45%|████▌     | 9/20 [00:00<00:00, 60.1it/s, v_num=0, train_loss=1.71]
    Epoch 1/1  ━━━━━━━━━━━━━━━━╸━━━ 15/20 0:00:00 • 0:00:01 62.48it/s train_loss: 1.744

The counter `n/total` is the step within an epoch when it resets at each epoch, else the step
of the whole job; an `Epoch i` (or `Epoch i/n`) before the bar names the epoch. A bar described
as evaluation (`Validation DataLoader 0`, `Sanity Checking`, `Testing`, ...) is not training. The bar's
updates are separated by carriage returns, which end lines here (payload.workloads.lines).
"""

from __future__ import annotations

import re

from payload.workloads.conventions.base import Reading, bounded

NAME = "tqdm"
EXPECTS = "Epoch 1/3:  30%|███       | 3/10 [00:01<00:02,  5.02it/s]"
_NUM = r"(\d{1,12}(?:\.\d+)?[kMG]?)"
# tqdm: `|bar| n/total [elapsed<remaining, rate]`; Rich (Lightning's RichProgressBar): `bar n/total h:mm:ss`.
_TQDM = re.compile(r"\|[^|]*\|\s*" + _NUM + r"/" + _NUM + r"\s*\[\d")
_RICH = re.compile(r"[━╸╺]+\s+" + _NUM + r"/" + _NUM + r"\s+\d+:\d\d:\d\d")
_EPOCH = re.compile(r"\bEpoch[ :]*(\d{1,9})(?:\s*/\s*(\d{1,9}))?", re.IGNORECASE)
# Bars of evaluation, not training (Lightning's `Validation DataLoader 0`, `Sanity Checking`, ...).
_EVAL = re.compile(r"\b(?:Validat\w*|Sanity Check\w*|Test\w*|Predict\w*|Evaluat\w*|Eval)\b", re.IGNORECASE)
_SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}


def _count(text: str) -> float | None:
    if text and text[-1] in _SCALE:  # tqdm's unit_scale: 1.2k
        base = bounded(text[:-1])
        return base * _SCALE[text[-1]] if base is not None else None
    return bounded(text, whole=True)


def read(line: str) -> Reading | None:
    m = _TQDM.search(line) or _RICH.search(line)
    if m is None:
        return None
    if _EVAL.search(line[: m.start()]):
        return Reading(boundary="eval")
    epoch = _EPOCH.search(line[: m.start()])
    return Reading(
        step=_count(m[1]),
        steps_per_epoch=_count(m[2]),
        epoch=bounded(epoch[1], whole=True) if epoch else None,
    )
