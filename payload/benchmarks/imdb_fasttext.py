"""imdb-fasttext: Keras' imdb_fasttext.py example (seed 002): n-grams of the training set get ids above
``max_features``, so the embedding grows with the data (the model's input dimension records it)."""

from __future__ import annotations

from payload import datasets, frameworks
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark


def add_ngrams(train, test, max_features: int, ngram_range: int):
    """The example's create_ngram_set/add_ngram, returning the new vocabulary size."""
    if ngram_range < 2:
        return train, test, max_features
    grams = set()
    for seq in train:
        for n in range(2, ngram_range + 1):
            grams.update(zip(*[list(seq)[i:] for i in range(n)]))
    token = {g: i + max_features + 1 for i, g in enumerate(sorted(grams))}

    def augment(seqs):
        out = []
        for seq in seqs:
            seq = list(seq)
            extra = [
                token[g] for n in range(2, ngram_range + 1) for g in zip(*[seq[i:] for i in range(n)]) if g in token
            ]
            out.append(seq + extra)
        return out

    vocab = (max(token.values()) + 1) if token else max_features
    return augment(train), augment(test), vocab


def load_data(source, params, global_batch):
    np = frameworks.numpy()
    maxlen, vocab = params["maxlen"], params["max_features"]
    if source.mode == "synthetic":
        x, y, xv, yv = c.synthetic(datasets.synthetic_sequences, params, 25000, 25000, maxlen // 2, vocab)
        x, xv = list(x), list(xv)
    else:
        (x, y), (xv, yv) = datasets.read_imdb(source, num_words=vocab)
        x, y = c.cap(x, y, params.get("samples"))  # before the n-grams are drawn from them
        xv, yv = c.cap(xv, yv, params.get("val_samples"))
    x, xv, full_vocab = add_ngrams(x, xv, vocab, params["ngram_range"])
    x, xv = datasets.pad_sequences(x, maxlen), datasets.pad_sequences(xv, maxlen)
    data = c.make_data(x, np.asarray(y), xv, np.asarray(yv), params, source)
    data.info["vocabulary"] = int(full_vocab)
    params["_vocabulary"] = int(full_vocab)  # build_model needs the grown size
    return data


def build_model(params):
    keras = frameworks.keras()
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((params["maxlen"],), dtype="int32"),
            L.Embedding(params.get("_vocabulary") or params["max_features"], params["embedding_dims"]),
            L.GlobalAveragePooling1D(),
            c.output_layer(1, "sigmoid"),
        ]
    )
    return c.compiled(model, "adam", "binary_crossentropy")


BENCHMARK = Benchmark(
    name="imdb-fasttext",
    description="IMDB sentiment, fastText-style bag of uni+bi-gram embeddings (dims 50), adam",
    study="seed 002 (Keras examples imdb_fasttext.py)",
    dataset="IMDB 25k/25k reviews, top 20000 words + bi-grams, maxlen 400, 2 classes",
    sample_unit="review",
    defaults={
        "epochs": 5,
        "batch_size": 32,
        "max_features": 20000,
        "maxlen": 400,
        "ngram_range": 2,
        "embedding_dims": 50,
    },
    load_data=load_data,
    build_model=build_model,
    param_help={"ngram_range": "2 adds bi-gram features (the example's setting)"},
)
