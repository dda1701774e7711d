"""The progress the frameworks print, read unmodified: one parser each, in PARSERS, the table of conventions.

The order is the order they are tried: the most specific first (a Keras bar is not a tqdm bar)."""

from __future__ import annotations

import re

from payload.workloads.conventions.base import Parser, Reading, bounded

# --- keras ---------------------------------------------------------------------------------------------------

KERAS_EXPECTS = "Epoch 1/20 then ` 9/25 ━━━━━━━━━━━━━━━━━━━━ 0s 7ms/step - loss: 2.69`"
_KERAS_EPOCH = re.compile(r"^\s*Epoch (\d{1,9})/(\d{1,9})\s*$")
# The bar (verbose=1) or the one line per epoch (verbose=2, `469/469 - 2s - 5ms/step - loss: ...`).
_KERAS_BAR = re.compile(
    r"^\s*(\d{1,12})/(\d{1,12}|Unknown)\s+(?:\S*[━=.>\[\]]\S*\s+)?(?:-\s+)?\d+(?:\.\d+)?(?:s|ms|us|µs)\b.*?/(?:step|sample)"
)


def read_keras(line: str) -> Reading | None:
    """Keras 3's `model.fit` output: `Epoch 3/20` lines and the progress bar, in a terminal or piped.

        Epoch 1/2
        \r 9/25 ━━━━━━━━━━━━━━━━━━━━ 0s 7ms/step - accuracy: 0.0998 - loss: 2.6989
        25/25 ━━━━━━━━━━━━━━━━━━━━ 1s 7ms/step - accuracy: 0.0928 - loss: 2.4615

    (keras.utils.Progbar: `step/steps` or `step/Unknown`, the bar, the time, the time per step;
    with verbose=2 one line per epoch, `25/25 - 1s - 7ms/step - loss: 2.46`.)
    An `Epoch i/n` line is an epoch boundary; the bar's counter is the step within the epoch."""
    if m := _KERAS_EPOCH.match(line):
        return Reading(epoch=bounded(m[1], whole=True), epochs=bounded(m[2], whole=True), boundary="epoch")
    if m := _KERAS_BAR.match(line):
        total = None if m[2] == "Unknown" else bounded(m[2], whole=True)
        return Reading(step=bounded(m[1], whole=True), steps_per_epoch=total)
    return None


# --- hf ------------------------------------------------------------------------------------------------------

HF_EXPECTS = "{'loss': 0.6915, 'learning_rate': 4.5e-05, 'epoch': 0.25}"
_HF_DICT = re.compile(r"^\s*\{'[a-z_]+': .*\}\s*$")
_HF_FIELD = re.compile(
    r"'(epoch|train_runtime|train_samples_per_second|train_steps_per_second)': '?([-+0-9.eE]{1,40})'?"
)
_HF_FINAL = {"train_runtime": "seconds", "train_samples_per_second": "samples_per_second"}


def read_hf(line: str) -> Reading | None:
    """The Hugging Face `Trainer`'s logged dictionaries, and its final speed metrics.

        {'loss': '0.6915', 'grad_norm': '0.5489', 'learning_rate': '4.5e-05', 'epoch': '0.25'}
        {'train_runtime': '3.389', 'train_samples_per_second': '188.8', 'train_steps_per_second': '11.8', 'train_loss': '0.6921', 'epoch': '2'}

    (transformers 5 prints the values as strings; 4.x as numbers: both are read.) `epoch` is the
    fraction of epochs done so far; crossing a whole epoch is an epoch boundary. Its progress bar
    (global steps out of the whole job's) is the tqdm convention's."""
    if not _HF_DICT.match(line):
        return None
    fields = {k: bounded(v) for k, v in _HF_FIELD.findall(line)}
    done = fields.get("epoch")
    if done is None or done < 0:
        return None
    final = tuple((_HF_FINAL[k], v) for k, v in fields.items() if k in _HF_FINAL and v is not None)
    return Reading(epochs_done=done, final=final)


# --- tqdm ----------------------------------------------------------------------------------------------------

TQDM_EXPECTS = "Epoch 1/3:  30%|███       | 3/10 [00:01<00:02,  5.02it/s]"
_TQDM_NUM = r"(\d{1,12}(?:\.\d+)?[kMG]?)"
# tqdm: `|bar| n/total [elapsed<remaining, rate]`; Rich (Lightning's RichProgressBar): `bar n/total h:mm:ss`.
_TQDM_BAR = re.compile(r"\|[^|]*\|\s*" + _TQDM_NUM + r"/" + _TQDM_NUM + r"\s*\[\d")
_TQDM_RICH = re.compile(r"[━╸╺]+\s+" + _TQDM_NUM + r"/" + _TQDM_NUM + r"\s+\d+:\d\d:\d\d")
_TQDM_EPOCH = re.compile(r"\bEpoch[ :]*(\d{1,9})(?:\s*/\s*(\d{1,9}))?", re.IGNORECASE)
# Bars of evaluation, not training (Lightning's `Validation DataLoader 0`, `Sanity Checking`, ...).
_TQDM_EVAL = re.compile(r"\b(?:Validat\w*|Sanity Check\w*|Test\w*|Predict\w*|Evaluat\w*|Eval)\b", re.IGNORECASE)
_TQDM_SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}


def _tqdm_count(text: str) -> float | None:
    if text and text[-1] in _TQDM_SCALE:  # tqdm's unit_scale: 1.2k
        base = bounded(text[:-1])
        return base * _TQDM_SCALE[text[-1]] if base is not None else None
    return bounded(text, whole=True)


def read_tqdm(line: str) -> Reading | None:
    """tqdm's bar, and bars built on it or drawn like it (Lightning's, Hugging Face Trainer's, Rich's).

        Epoch 1/2:  30%|███       | 3/10 [00:00<00:01,  5.02it/s]
          2%|▎         | 1/40 [00:00<00:05,  6.72it/s]
        Epoch 0:  45%|████▌     | 9/20 [00:00<00:00, 60.1it/s, v_num=0, train_loss=1.71]
        Epoch 1/1  ━━━━━━━━━━━━━━━━╸━━━ 15/20 0:00:00 • 0:00:01 62.48it/s train_loss: 1.744

    The counter `n/total` is the step within an epoch when it resets at each epoch, else the step
    of the whole job; an `Epoch i` (or `Epoch i/n`) before the bar names the epoch. A bar described
    as evaluation (`Validation DataLoader 0`, `Sanity Checking`, `Testing`, ...) is not training. The bar's
    updates are separated by carriage returns, which end lines here (payload.workloads.lines)."""
    m = _TQDM_BAR.search(line) or _TQDM_RICH.search(line)
    if m is None:
        return None
    if _TQDM_EVAL.search(line[: m.start()]):
        return Reading(boundary="eval")
    epoch = _TQDM_EPOCH.search(line[: m.start()])
    return Reading(
        step=_tqdm_count(m[1]),
        steps_per_epoch=_tqdm_count(m[2]),
        epoch=bounded(epoch[1], whole=True) if epoch else None,
    )


PARSERS = {
    "keras": Parser("keras", KERAS_EXPECTS, read_keras),
    "hf": Parser("hf", HF_EXPECTS, read_hf),
    "tqdm": Parser("tqdm", TQDM_EXPECTS, read_tqdm),
}
