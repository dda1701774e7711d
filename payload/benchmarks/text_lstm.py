"""text-lstm: Keras' lstm_text_generation.py example (seed 002), Nietzsche, char level.

40-character windows (step 3) predict the next character; windows stay ids and are one-hot encoded
per batch in tf.data (the example's one-hot tensor is GBs at full scale); 10% are held out for a
next-character accuracy.
"""

from __future__ import annotations

from payload import datasets, frameworks
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark


def sequences(text: str, maxlen: int, step: int):
    np = frameworks.numpy()
    chars = sorted(set(text))
    index = {ch: i for i, ch in enumerate(chars)}
    ids = np.fromiter((index[ch] for ch in text), dtype=np.int32, count=len(text))
    starts = np.arange(0, len(text) - maxlen, step)
    x = ids[starts[:, None] + np.arange(maxlen)[None, :]]
    y = ids[starts + maxlen]
    return x, y, len(chars)


def load_data(source, params, global_batch):
    np = frameworks.numpy()
    tf = frameworks.tensorflow()
    maxlen = params["maxlen"]
    if source.mode == "synthetic":
        rng = c.rng_for(params)
        n = c.n_synthetic(params, 200_000)
        text_ids = np.clip(rng.zipf(1.5, size=n * params["step"] + maxlen + 1) - 1, 0, params["chars"] - 1)
        text = "".join(chr(32 + int(i)) for i in text_ids)
    else:
        text = datasets.read_nietzsche(source)
    x, y, nchars = sequences(text, maxlen, params["step"])
    params["_chars"] = nchars
    x, y, xv, yv = c.holdout(x, y, 0.1, c.rng_for(params))

    def one_hot(xb, yb):
        return tf.one_hot(xb, nchars), yb

    data = c.make_data(x, y, xv, yv, params, source, transform=one_hot)
    data.info["chars"] = nchars
    return data


def build_model(params):
    keras = frameworks.keras()
    nchars = params.get("_chars") or params["chars"]
    model = keras.Sequential(
        [
            keras.Input((params["maxlen"], nchars)),
            keras.layers.LSTM(params["units"]),
            c.output_layer(nchars, "softmax"),
        ]
    )
    return c.compiled(model, keras.optimizers.RMSprop(learning_rate=0.01))


BENCHMARK = Benchmark(
    name="text-lstm",
    description="Character-level text generation, LSTM 128 over 40-char windows of Nietzsche, RMSprop",
    study="seed 002 (Keras examples lstm_text_generation.py)",
    dataset="nietzsche.txt (~600k chars, ~57 distinct), windows of 40, step 3",
    sample_unit="character window",
    defaults={"epochs": 10, "batch_size": 128, "maxlen": 40, "step": 3, "units": 128, "chars": 57},
    load_data=load_data,
    build_model=build_model,
    param_help={"chars": "alphabet size of synthetic text", "samples": "cap on training windows"},
)
