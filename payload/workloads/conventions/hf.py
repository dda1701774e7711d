"""The Hugging Face `Trainer`'s logged dictionaries, and its final speed metrics.

    {'loss': '0.6915', 'grad_norm': '0.5489', 'learning_rate': '4.5e-05', 'epoch': '0.25'}
    {'train_runtime': '3.389', 'train_samples_per_second': '188.8', 'train_steps_per_second': '11.8', 'train_loss': '0.6921', 'epoch': '2'}

(transformers 5 prints the values as strings; 4.x as numbers: both are read.) `epoch` is the
fraction of epochs done so far; crossing a whole epoch is an epoch boundary. Its progress bar
(global steps out of the whole job's) is the tqdm convention's.
"""

from __future__ import annotations

import re

from payload.workloads.conventions.base import Reading, bounded

NAME = "hf"
EXPECTS = "{'loss': 0.6915, 'learning_rate': 4.5e-05, 'epoch': 0.25}"
_DICT = re.compile(r"^\s*\{'[a-z_]+': .*\}\s*$")
_FIELD = re.compile(r"'(epoch|train_runtime|train_samples_per_second|train_steps_per_second)': '?([-+0-9.eE]{1,40})'?")
_FINAL = {"train_runtime": "seconds", "train_samples_per_second": "samples_per_second"}


def read(line: str) -> Reading | None:
    if not _DICT.match(line):
        return None
    fields = {k: bounded(v) for k, v in _FIELD.findall(line)}
    done = fields.get("epoch")
    if done is None or done < 0:
        return None
    final = tuple((_FINAL[k], v) for k, v in fields.items() if k in _FINAL and v is not None)
    return Reading(epochs_done=done, final=final)
