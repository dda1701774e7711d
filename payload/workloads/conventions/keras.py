"""Keras 3's `model.fit` output: `Epoch 3/20` lines and the progress bar, in a terminal or piped.

    Epoch 1/2
    \r 9/25 ━━━━━━━━━━━━━━━━━━━━ 0s 7ms/step - accuracy: 0.0998 - loss: 2.6989
    25/25 ━━━━━━━━━━━━━━━━━━━━ 1s 7ms/step - accuracy: 0.0928 - loss: 2.4615

(keras.utils.Progbar: `step/steps` or `step/Unknown`, the bar, the time, the time per step;
with verbose=2 one line per epoch, `25/25 - 1s - 7ms/step - loss: 2.46`.)
An `Epoch i/n` line is an epoch boundary; the bar's counter is the step within the epoch.
"""

from __future__ import annotations

import re

from payload.workloads.conventions.base import Reading, bounded

NAME = "keras"
EXPECTS = "Epoch 1/20 then ` 9/25 ━━━━━━━━━━━━━━━━━━━━ 0s 7ms/step - loss: 2.69`"
_EPOCH = re.compile(r"^\s*Epoch (\d{1,9})/(\d{1,9})\s*$")
# The bar (verbose=1) or the one line per epoch (verbose=2, `469/469 - 2s - 5ms/step - loss: ...`).
_BAR = re.compile(
    r"^\s*(\d{1,12})/(\d{1,12}|Unknown)\s+(?:\S*[━=.>\[\]]\S*\s+)?(?:-\s+)?\d+(?:\.\d+)?(?:s|ms|us|µs)\b.*?/(?:step|sample)"
)


def read(line: str) -> Reading | None:
    if m := _EPOCH.match(line):
        return Reading(epoch=bounded(m[1], whole=True), epochs=bounded(m[2], whole=True), boundary="epoch")
    if m := _BAR.match(line):
        total = None if m[2] == "Unknown" else bounded(m[2], whole=True)
        return Reading(step=bounded(m[1], whole=True), steps_per_epoch=total)
    return None
