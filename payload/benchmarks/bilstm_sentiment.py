"""bilstm-sentiment: seed 000's GPU benchmark (RaRe Technologies, 2018).

Twitter sentiment (thinknook, 1,578,627 tweets): 4 epochs on 90% of the shuffled data, accuracy on the
held-out 10%. Keras 3 has no CuDNNLSTM: its LSTM takes the cuDNN kernel on a GPU with the defaults kept.
Tokens follow the study's clean_str; the vocabulary is capped at ``max_features`` (the study kept every
word); sequences pad to the longest tweet unless ``maxlen`` is set.
"""

from __future__ import annotations

from payload import datasets
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark

SYNTHETIC_MAXLEN = 40


def load_data(source, params, global_batch):
    rng = c.rng_for(params)
    if source.mode == "synthetic":
        n = c.n_synthetic(params, 1_578_627)
        x, y = datasets.synthetic_sequences(rng, n, params["maxlen"] or SYNTHETIC_MAXLEN, params["max_features"])
        vocab = params["max_features"]
    else:
        texts, y = datasets.read_tweets(source)
        x, vocab = datasets.tokenize_tweets(texts, params["max_features"], params["maxlen"])
    params["_vocabulary"], params["_maxlen"] = int(vocab), int(x.shape[1])
    x, y, xv, yv = c.holdout(x, y, 0.1, rng)
    data = c.make_data(x, y, xv, yv, params, source)
    data.info.update(vocabulary=int(vocab), maxlen=int(x.shape[1]))
    return data


def build_model(params):
    maxlen = params.get("_maxlen") or params["maxlen"] or SYNTHETIC_MAXLEN
    return c.bilstm_classifier(maxlen, params.get("_vocabulary") or params["max_features"])


BENCHMARK = Benchmark(
    name="bilstm-sentiment",
    description="Tweet sentiment, Embedding 128 + bidirectional LSTM 64 (cuDNN on GPU), dropout 0.5, adam",
    study="seed 000 (RaRe Technologies GPU mega-benchmark)",
    dataset="thinknook Twitter sentiment CSV, 1,578,627 tweets, 90/10 split, 2 classes",
    sample_unit="tweet",
    defaults={"epochs": 4, "batch_size": 32, "max_features": 100_000, "maxlen": None},
    load_data=load_data,
    build_model=build_model,
    param_help={
        "max_features": "vocabulary cap (most frequent words)",
        "maxlen": "tokens per tweet (default: longest tweet; synthetic: 40)",
    },
)
