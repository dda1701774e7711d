"""imdb-bilstm: Keras' imdb_bidirectional_lstm.py example (seed 002); Keras 3's LSTM takes the cuDNN
kernel on a GPU with the defaults kept, as here."""

from __future__ import annotations

from payload import datasets
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark


def load_data(source, params, global_batch):
    maxlen, vocab = params["maxlen"], params["max_features"]
    if source.mode == "synthetic":
        x, y, xv, yv = c.synthetic(datasets.synthetic_sequences, params, 25000, 25000, maxlen, vocab)
    else:
        (x, y), (xv, yv) = datasets.read_imdb(source, num_words=vocab)
        x, xv = datasets.pad_sequences(x, maxlen), datasets.pad_sequences(xv, maxlen)
    return c.make_data(x, y, xv, yv, params, source)


def build_model(params):
    return c.bilstm_classifier(params["maxlen"], params["max_features"])


BENCHMARK = Benchmark(
    name="imdb-bilstm",
    description="IMDB sentiment, Embedding 128 + bidirectional LSTM 64 (cuDNN on GPU), adam",
    study="seed 002 (Keras examples imdb_bidirectional_lstm.py)",
    dataset="IMDB 25k/25k reviews, top 20000 words, maxlen 100, 2 classes",
    sample_unit="review",
    defaults={"epochs": 4, "batch_size": 32, "max_features": 20000, "maxlen": 100},
    load_data=load_data,
    build_model=build_model,
    param_help={"max_features": "vocabulary size", "maxlen": "tokens per review"},
)
