"""Dataset readers in the formats the studies used, and synthetic stand-ins with the real shapes, vocabulary
sizes and class counts. ``download`` fetches through keras.datasets / keras.utils.get_file, ``dir`` reads the
same files locally: ``mnist.npz``, ``imdb.npz``, ``cifar-10-batches-py/``, ``nietzsche.txt``, and a ``*.csv``
of tweets with the thinknook header ``ItemID,Sentiment,SentimentSource,SentimentText``.
"""

from __future__ import annotations

import csv
import glob
import os
import pickle
import re
from collections import Counter
from typing import TYPE_CHECKING

from payload import frameworks

if TYPE_CHECKING:
    import numpy as np

TWEETS_URL = "http://thinknook.com/wp-content/uploads/2012/09/Sentiment-Analysis-Dataset.zip"
NIETZSCHE_URL = "https://s3.amazonaws.com/text-datasets/nietzsche.txt"


class DatasetError(RuntimeError):
    """A local dataset file is missing or malformed."""


def _need(path: str) -> str:
    if not os.path.exists(path):
        raise DatasetError(f"expected dataset file {path} (see payload.datasets for formats)")
    return path


def synthetic_images(rng: np.random.Generator, n: int, shape: tuple, classes: int):
    """uint8 images and int labels, learnable: class shifts the mean brightness."""
    np = frameworks.numpy()
    y = rng.integers(0, classes, size=n)
    x = rng.integers(0, 200, size=(n, *shape), dtype=np.int64)
    x = x + (y * (55 // max(1, classes - 1) if classes > 1 else 0)).reshape(-1, *[1] * len(shape))
    return np.clip(x, 0, 255).astype(np.uint8), y.astype(np.int32)


ZIPF_A = 1.3  # the exponent of the synthetic text's word ranks


def synthetic_sequences(rng: np.random.Generator, n: int, maxlen: int, vocab: int, classes: int = 2):
    """Zipf-distributed token ids (like text) with a label-dependent marker token, by inverse CDF: the law of
    `np.clip(rng.zipf(1.3, ...), 1, vocab - 1)` at a third of its CPU (seconds at a study's size)."""
    np = frameworks.numpy()
    last = max(vocab - 2, 1)  # ranks 1..last by their own weight; the rest of the law is the id vocab - 1
    weights = np.arange(1, last + 1, dtype=np.float64) ** -ZIPF_A
    # zeta(a): the sum up to `last` plus the Euler-Maclaurin tail beyond it
    zeta = weights.sum() + last ** (1 - ZIPF_A) / (ZIPF_A - 1) - last**-ZIPF_A / 2 + ZIPF_A * last ** (-ZIPF_A - 1) / 12
    cdf = np.cumsum(weights) / zeta
    ranks = np.searchsorted(cdf, rng.random((n, maxlen)), side="right") + 1
    ranks = np.minimum(ranks, max(vocab - 1, 1)).astype(np.int32)
    y = rng.integers(0, classes, size=n).astype(np.int32)
    ranks[:, 0] = 1 + y  # a weak but learnable signal
    return ranks, y


def pad_sequences(seqs, maxlen: int) -> np.ndarray:
    """Keras' default: pre-padding with 0 and pre-truncation."""
    np = frameworks.numpy()
    out = np.zeros((len(seqs), maxlen), dtype=np.int32)
    for i, s in enumerate(seqs):
        s = list(s)[-maxlen:]
        if s:
            out[i, -len(s) :] = s
    return out


_CLEAN = [
    (r"[^A-Za-z0-9(),!?\'\`]", " "),
    (r"(.)\1+", r"\1\1"),
    (r"\'s", " 's"),
    (r"\'ve", " 've"),
    (r"n\'t", " n't"),
    (r"\'re", " 're"),
    (r"\'d", " 'd"),
    (r"\'ll", " 'll"),
    (r",", " , "),
    (r"!", " ! "),
    (r"\(", " ( "),
    (r"\)", " ) "),
    (r"\?", " ? "),
    (r"\s{2,}", " "),
]
_CLEAN_RE = [(re.compile(p), r) for p, r in _CLEAN]


def clean_tweet(text: str) -> str:
    """The study's clean_str (RaRe data_helpers, from twitter-sentiment-cnn)."""
    for pattern, repl in _CLEAN_RE:
        text = pattern.sub(repl, text)
    return text.strip().lower()


def tokenize_tweets(texts: list[str], max_features: int, maxlen: int | None):
    """Word ids by frequency (1 = most frequent, 0 = padding, max_features-1 = OOV)."""
    tokens = [clean_tweet(t).split(" ") for t in texts]
    counts = Counter(w for ts in tokens for w in ts if w)
    vocab = {w: i + 1 for i, (w, _) in enumerate(counts.most_common(max_features - 2))}
    oov = max_features - 1
    ids = [[vocab.get(w, oov) for w in ts if w] for ts in tokens]
    maxlen = maxlen or max((len(s) for s in ids), default=1)
    return pad_sequences(ids, maxlen), len(vocab) + 2


def read_mnist(source):
    np = frameworks.numpy()
    if source.mode == "dir":
        with np.load(_need(os.path.join(source.path, "mnist.npz"))) as f:
            return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
    return frameworks.keras().datasets.mnist.load_data()


def _cifar_batch(path: str):
    np = frameworks.numpy()
    with open(_need(path), "rb") as f:
        d = pickle.load(f, encoding="bytes")
    data = d.get(b"data", d.get("data"))
    labels = d.get(b"labels", d.get("labels"))
    x = np.asarray(data, dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return x, np.asarray(labels, dtype=np.int32)


def read_cifar10(source):
    np = frameworks.numpy()
    if source.mode == "dir":
        base = os.path.join(source.path, "cifar-10-batches-py")
        parts = [_cifar_batch(os.path.join(base, f"data_batch_{i}")) for i in range(1, 6)]
        x_test, y_test = _cifar_batch(os.path.join(base, "test_batch"))
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])), (x_test, y_test)
    (x, y), (xt, yt) = frameworks.keras().datasets.cifar10.load_data()
    return (x, y.reshape(-1)), (xt, yt.reshape(-1))


def read_imdb(source, num_words: int, seed: int = 113, start_char=1, oov_char=2, index_from=3):
    """Same processing as keras.datasets.imdb.load_data (shuffle, shift, OOV)."""
    np = frameworks.numpy()
    if source.mode != "dir":
        return frameworks.keras().datasets.imdb.load_data(num_words=num_words)
    with np.load(_need(os.path.join(source.path, "imdb.npz")), allow_pickle=True) as f:
        x_train, y_train, x_test, y_test = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    out = []
    for x, y in ((x_train, y_train), (x_test, y_test)):
        idx = np.arange(len(x))
        rng.shuffle(idx)
        seqs = [[start_char] + [w + index_from for w in x[i]] for i in idx]
        seqs = [[w if w < num_words else oov_char for w in s] for s in seqs]
        out.append((np.array(seqs, dtype=object), np.asarray(y)[idx]))
    return tuple(out)


def read_nietzsche(source) -> str:
    if source.mode == "dir":
        path = _need(os.path.join(source.path, "nietzsche.txt"))
    else:
        path = frameworks.keras().utils.get_file("nietzsche.txt", origin=NIETZSCHE_URL)
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().lower()


def _tweets_csv(source) -> str:
    if source.mode == "dir":
        found = sorted(glob.glob(os.path.join(source.path, "*.csv")))
        if not found:
            raise DatasetError(
                f"no *.csv tweets file in {source.path} (thinknook format: "
                "ItemID,Sentiment,SentimentSource,SentimentText)"
            )
        return found[0]
    folder = frameworks.keras().utils.get_file("Sentiment-Analysis-Dataset.zip", origin=TWEETS_URL, extract=True)
    found = sorted(glob.glob(os.path.join(os.path.dirname(folder), "**", "*.csv"), recursive=True))
    if not found:
        raise DatasetError(f"downloaded {TWEETS_URL} but found no CSV in it")
    return found[0]


def read_tweets(source) -> tuple[list[str], np.ndarray]:
    """Texts and 0/1 labels from the thinknook CSV (malformed rows skipped)."""
    np = frameworks.numpy()
    path = _tweets_csv(source)
    texts, labels = [], []
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header or [h.strip() for h in header[:4]] != ["ItemID", "Sentiment", "SentimentSource", "SentimentText"]:
            raise DatasetError(
                f"{path}: expected header ItemID,Sentiment,SentimentSource,SentimentText, got {header!r}"
            )
        for row in reader:
            if len(row) < 4 or row[1].strip() not in ("0", "1"):
                continue
            labels.append(int(row[1]))
            texts.append(",".join(row[3:]))
    if not texts:
        raise DatasetError(f"{path}: no labelled rows")
    return texts, np.asarray(labels, dtype=np.int32)
