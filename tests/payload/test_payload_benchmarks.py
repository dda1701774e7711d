"""Every benchmark trains at tiny scale on the CPU and writes a valid result (resnet50 and inception3 build and
take their batch: they train through vgg16's path, see BUILT_ONLY).

The defaults stay full scale; these tests shrink them through --param.
"""

from __future__ import annotations

import csv
import pickle

import numpy as np
import pytest
from payload_helpers import check_completed_run, check_finished_outputs, only_result, run_payload

from payload.benchmarks import REGISTRY
from payload.benchmarks.imagenet_models import MODELS
from payload.config import DataSource

TINY = {
    "bilstm-sentiment": ["--epochs", "2", "--batch-size", "16", "--param", "samples=200,max_features=500,maxlen=12"],
    "mnist-mlp": ["--epochs", "2", "--batch-size", "32", "--param", "samples=256,val_samples=64,hidden=32"],
    "mnist-cnn": ["--epochs", "1", "--batch-size", "32", "--param", "samples=128,val_samples=32"],
    "cifar10-cnn": ["--epochs", "1", "--batch-size", "32", "--param", "samples=128,val_samples=32"],
    "imdb-bilstm": [
        "--epochs",
        "1",
        "--batch-size",
        "32",
        "--param",
        "samples=128,val_samples=32,max_features=500,maxlen=16",
    ],
    "text-lstm": ["--epochs", "1", "--batch-size", "32", "--param", "samples=300,maxlen=10,units=16"],
    "imdb-fasttext": [
        "--epochs",
        "2",
        "--batch-size",
        "32",
        "--param",
        "samples=128,val_samples=32,max_features=500,maxlen=32",
    ],
    "vgg16": ["--steps", "6", "--batch-size", "2", "--param", "image_size=32,classes=10,warmup_steps=2"],
}


# catsdogs-resnet50 trains once per session, on tiny JPEGs (test_payload_catsdogs.py checks that run as
# test_benchmark_tiny_synthetic checks the others'); its synthetic data is checked below without training.
TRAINED_ON_FILES = {"catsdogs-resnet50"}

# resnet50, inception3 and vgg16 are one table of keras.applications models with one set of functions
# (payload.benchmarks.imagenet_models): vgg16 trains above through their shared throughput path, and ResNet-50's
# body trains in catsdogs-resnet50's run. The other two build at their smallest input and take their synthetic
# batch below (training either costs 10 s of CPU in graph tracing, on the same path as vgg16).
BUILT_ONLY = {"resnet50": 32, "inception3": 75}


def test_every_registered_benchmark_has_a_tiny_test():
    tested = (set(TINY), TRAINED_ON_FILES, set(BUILT_ONLY))
    assert set.union(*tested) == set(REGISTRY) and sum(map(len, tested)) == len(REGISTRY)
    assert {m.name for m in MODELS} - set(BUILT_ONLY) <= set(TINY)  # one of the table's models trains
    assert len(REGISTRY) == 11


def test_defaults_are_full_scale():
    assert REGISTRY["resnet50"].defaults["image_size"] == 224
    assert REGISTRY["inception3"].defaults["image_size"] == 299
    assert REGISTRY["vgg16"].defaults["classes"] == 1000
    assert REGISTRY["bilstm-sentiment"].defaults["epochs"] == 4
    assert all(b.defaults.get("samples") is None for b in REGISTRY.values() if b.kind == "epochs")


@pytest.mark.parametrize("name", sorted(TINY))
def test_benchmark_tiny_synthetic(name, tmp_path, capsys):
    rc = run_payload(
        "--benchmark",
        name,
        "--results",
        str(tmp_path / "res"),
        "--stack",
        "cpu-test",
        "--data",
        "synthetic",
        *TINY[name],
    )
    assert rc == 0
    run_dir, result = only_result(tmp_path / "res", "cpu-test")
    rows = check_completed_run(run_dir, result, name)
    m = result["metrics"]
    if REGISTRY[name].kind == "epochs":
        epochs = int(TINY[name][1])
        assert m["epochs_completed"] == epochs and len(rows) == epochs
        assert [int(r["epoch"]) for r in rows] == list(range(1, epochs + 1))
        assert 0.0 <= m["final_accuracy"] <= 1.0
        # the final accuracy is the last epoch's (a phased benchmark's own, seed 003's TTA one: test_payload_catsdogs)
        assert float(rows[-1]["val_acc"]) == pytest.approx(m["final_accuracy"])
    else:
        steps = int(TINY[name][1])
        assert m["steps_completed"] == steps and m["final_accuracy"] is None
        spread = m["samples_per_second_spread"]
        assert spread["n"] == steps - m["warmup_steps"] and spread["p10"] <= spread["p50"] <= spread["p90"]
        assert result["benchmark"]["data"] == "synthetic"
    check_finished_outputs(run_dir, capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(BUILT_ONLY))
def test_throughput_model_takes_its_synthetic_batch(name):
    """The model of the throughput table, built at its smallest input (compiled, as the runner gets it),
    maps its one synthetic batch to a probability per class."""
    bench = REGISTRY[name]
    trained = REGISTRY["vgg16"]  # the same functions, trained in test_benchmark_tiny_synthetic
    assert bench.kind == trained.kind == "throughput" and bench.load_data is trained.load_data
    assert bench.build_model.func is trained.build_model.func
    params = dict(bench.params({"image_size": str(BUILT_ONLY[name]), "classes": "10"}), seed=1)
    data = bench.load_data(DataSource("synthetic"), params, 2)
    assert data.repeat_single_batch and data.x_train.shape == (2, BUILT_ONLY[name], BUILT_ONLY[name], 3)
    model = bench.build_model(params)
    assert model.compiled
    out = np.asarray(model(data.x_train, training=False))
    assert out.shape == (2, 10) and np.allclose(out.sum(axis=1), 1.0, atol=1e-4)


def test_catsdogs_synthetic_images_feed_its_model():
    """--data synthetic for catsdogs-resnet50: uint8 images of the asked size, cast to float32 for the model
    (its training is tested on JPEGs; the data source does not change the training code)."""
    bench = REGISTRY["catsdogs-resnet50"]
    params = dict(bench.params({"weights": "none", "image_size": "32", "samples": "8", "val_samples": "4"}), seed=1)
    data = bench.load_data(DataSource("synthetic"), params, 4)
    assert data.source == "synthetic" and data.info == {"layout": "synthetic"}
    assert data.x_train.shape == (8, 32, 32, 3) and data.x_val.shape == (4, 32, 32, 3)
    assert data.x_train.dtype == np.uint8 and set(np.unique(data.y_train)) <= {0, 1}
    x, y = data.transform(data.x_train[:4], data.y_train[:4])
    assert x.dtype.name == "float32" and np.array_equal(np.asarray(x), data.x_train[:4].astype(np.float32))
    out = np.asarray(bench.build_model(params)(x, training=False))
    assert out.shape == (4, 2) and np.isfinite(out).all()


def test_mixed_precision_policy_is_used_and_restored(tmp_path):
    import keras

    rc = run_payload(
        "--benchmark",
        "mnist-mlp",
        "--results",
        str(tmp_path),
        "--stack",
        "mp",
        "--data",
        "synthetic",
        "--precision",
        "mixed",
        *TINY["mnist-mlp"],
    )
    assert rc == 0
    _, result = only_result(tmp_path, "mp")
    assert result["benchmark"]["precision"] == "mixed"
    assert keras.mixed_precision.global_policy().name == "float32"


# -- the studies' file formats ------------------------------------------------------


@pytest.fixture
def study_files(tmp_path):
    """Small files in the formats the studies used."""
    rng = np.random.default_rng(0)
    d = tmp_path / "data"
    d.mkdir()
    np.savez(
        d / "mnist.npz",
        x_train=rng.integers(0, 255, (96, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, 96),
        x_test=rng.integers(0, 255, (32, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, 32),
    )
    cifar = d / "cifar-10-batches-py"
    cifar.mkdir()
    for name, n in [(f"data_batch_{i}", 20) for i in range(1, 6)] + [("test_batch", 16)]:
        with open(cifar / name, "wb") as f:
            pickle.dump(
                {b"data": rng.integers(0, 255, (n, 3072), dtype=np.uint8), b"labels": list(rng.integers(0, 10, n))}, f
            )

    def reviews(n):
        arr = np.empty(n, dtype=object)
        for i in range(n):
            arr[i] = list(rng.integers(1, 900, rng.integers(5, 40)))
        return arr

    np.savez(
        d / "imdb.npz",
        x_train=reviews(96),
        y_train=rng.integers(0, 2, 96),
        x_test=reviews(32),
        y_test=rng.integers(0, 2, 32),
    )
    (d / "nietzsche.txt").write_text(
        "PREFACE\n\nSupposing that Truth is a woman--what then? Is there not ground for suspecting "
        "that all philosophers, in so far as they have been dogmatists, have failed to understand women. " * 8
    )
    with open(d / "Sentiment Analysis Dataset.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ItemID", "Sentiment", "SentimentSource", "SentimentText"])
        for i in range(120):
            good = i % 2
            w.writerow(
                [
                    i + 1,
                    good,
                    "Sentiment140",
                    ("I love this, sooooo good!!" if good else "is so sad, can't sleep :(") + f" #{i}",
                ]
            )
        w.writerow(["999", "x", "Sentiment140", "malformed label"])
    return d


def test_readers_parse_the_study_formats(study_files):
    from payload import datasets

    src = DataSource("dir", str(study_files))
    (x, y), (xt, yt) = datasets.read_mnist(src)
    assert x.shape == (96, 28, 28) and xt.shape == (32, 28, 28)
    (x, y), (xt, yt) = datasets.read_cifar10(src)
    assert x.shape == (100, 32, 32, 3) and xt.shape == (16, 32, 32, 3) and y.dtype == np.int32
    (x, y), (xt, yt) = datasets.read_imdb(src, num_words=500)
    assert len(x) == 96 and all(s[0] == 1 for s in x)  # start char
    assert max(max(s) for s in x) < 500 and any(2 in s for s in x)  # OOV char for >= num_words
    text = datasets.read_nietzsche(src)
    assert text.startswith("preface") and text == text.lower()
    texts, labels = datasets.read_tweets(src)
    assert len(texts) == 120 and set(labels) == {0, 1}  # malformed row skipped
    assert datasets.clean_tweet("I love this, sooooo good!!") == "i love this , soo good ! !"
    ids, vocab = datasets.tokenize_tweets(texts, max_features=50, maxlen=None)
    assert ids.shape[0] == 120 and ids.max() < 50 and vocab <= 50


def test_reader_errors_name_the_file(tmp_path):
    from payload import datasets

    src = DataSource("dir", str(tmp_path))
    with pytest.raises(datasets.DatasetError, match="mnist.npz"):
        datasets.read_mnist(src)
    (tmp_path / "tweets.csv").write_text("id,label,text\n1,0,hi\n")
    with pytest.raises(datasets.DatasetError, match="ItemID,Sentiment,SentimentSource,SentimentText"):
        datasets.read_tweets(src)


DIR_PARAMS = {
    "bilstm-sentiment": {"max_features": 200},
    "mnist-mlp": {"hidden": 16},
    "mnist-cnn": {},
    "cifar10-cnn": {},
    "imdb-bilstm": {"max_features": 500, "maxlen": 16},
    "text-lstm": {"units": 8},
    "imdb-fasttext": {"max_features": 500, "maxlen": 32},
}


@pytest.mark.parametrize("name", sorted(DIR_PARAMS))
def test_epoch_benchmark_loads_study_files_and_model_accepts_them(name, study_files):
    """load_data(--data DIR) -> arrays the benchmark's own model consumes (one forward pass)."""
    bench = REGISTRY[name]
    params = dict(bench.params({k: str(v) for k, v in DIR_PARAMS[name].items()}), seed=1)
    data = bench.load_data(DataSource("dir", str(study_files)), params, 16)
    assert data.source == str(study_files)
    assert len(data.x_train) == len(data.y_train) > 16 and len(data.x_val) == len(data.y_val) > 0
    model = bench.build_model(params)
    x, y = data.x_train[:4], data.y_train[:4]
    if data.transform is not None:
        x, y = data.transform(x, y)
    out = np.asarray(model(x, training=False))
    assert out.shape[0] == 4 and np.isfinite(out).all()


def test_bilstm_sentiment_trains_from_the_tweets_csv(study_files, tmp_path):
    """Seed 000 end to end from the thinknook CSV (--data DIR)."""
    rc = run_payload(
        "--benchmark",
        "bilstm-sentiment",
        "--results",
        str(tmp_path / "res"),
        "--stack",
        "tweets",
        "--data",
        str(study_files),
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--param",
        "max_features=200",
    )
    assert rc == 0
    run_dir, result = only_result(tmp_path / "res", "tweets")
    check_completed_run(run_dir, result, "bilstm-sentiment")
    assert result["benchmark"]["data"] == str(study_files)
    # 90/10 split of the 120 labelled tweets: 108 for training, batch 16 -> 6 full steps
    assert result["metrics"]["steps_completed"] == 6


@pytest.mark.parametrize("vocab", [3, 50, 100_000])
def test_synthetic_text_follows_the_clipped_zipf_law_of_numpy(vocab):
    """The synthetic word ids are drawn by inverse CDF; their law must be numpy's
    `clip(zipf(1.3), 1, vocab - 1)`, which the text benchmarks were built on."""
    from payload.datasets import synthetic_sequences

    n = 20_000
    x, y = synthetic_sequences(np.random.default_rng(1), n, 21, vocab)
    words = x[:, 1:]  # the first id carries the label
    reference = np.clip(np.random.default_rng(2).zipf(1.3, size=(n, 20)), 1, vocab - 1)
    assert words.min() >= 1 and words.max() <= vocab - 1 and x.dtype == np.int32
    assert set(np.unique(y)) <= {0, 1} and (x[:, 0] == 1 + y).all()
    for rank in sorted({1, 2, 10, vocab - 1}):
        got, want = (words == rank).mean(), (reference == rank).mean()
        assert abs(got - want) <= 4 * np.sqrt(want * (1 - want) / words.size) + 1e-4, (rank, got, want)
