"""Every benchmark trains at tiny scale on the CPU and writes a valid result.

The defaults stay full scale; these tests shrink them through --param.
"""

from __future__ import annotations

import csv
import json
import pickle

import numpy as np
import pytest
from payload_helpers import only_result, run_payload

from payload.benchmarks import REGISTRY
from payload.config import DataSource
from payload.schema import validate_result

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
    "resnet50": ["--steps", "4", "--batch-size", "2", "--param", "image_size=32,classes=10,warmup_steps=1"],
    "inception3": ["--steps", "3", "--batch-size", "2", "--param", "image_size=75,classes=10,warmup_steps=1"],
    "vgg16": ["--steps", "6", "--batch-size", "2", "--param", "image_size=32,classes=10,warmup_steps=2"],
    "catsdogs-resnet50": [
        "--epochs",
        "2",
        "--batch-size",
        "4",
        "--param",
        "weights=none,image_size=32,frozen_epochs=1,samples=16,val_samples=8,tta_steps=1",
    ],
}


def test_every_registered_benchmark_has_a_tiny_test():
    assert set(TINY) == set(REGISTRY)
    assert len(REGISTRY) == 11


def test_defaults_are_full_scale():
    assert REGISTRY["resnet50"].defaults["image_size"] == 224
    assert REGISTRY["inception3"].defaults["image_size"] == 299
    assert REGISTRY["vgg16"].defaults["classes"] == 1000
    assert REGISTRY["bilstm-sentiment"].defaults["epochs"] == 4
    assert all(b.defaults.get("samples") is None for b in REGISTRY.values() if b.kind == "epochs")


def _check_common(run_dir, result, name):
    validate_result(result)
    assert result["status"] == "completed", result["error"]
    assert result["exit_code"] == 0
    assert result["benchmark"]["name"] == name
    assert result["hardware"]["device"] == "CPU" and result["hardware"]["gpu_model"] is None
    assert result["metrics"]["gpu_utilization_mean"] is None  # no GPU: null, never invented
    assert result["metrics"]["samples_per_second"] > 0
    assert result["metrics"]["train_seconds"] > 0
    assert result["software"]["tensorflow"]
    events = [e["event"] for e in result["timeline"]]
    for e in ("run_start", "devices", "data_loaded", "train_start", "train_end", "upload"):
        assert e in events
    assert (run_dir / "events.jsonl").read_text().count("\n") == len(result["timeline"])
    return list(csv.DictReader((run_dir / "epochs.csv").open()))


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
    rows = _check_common(run_dir, result, name)
    m = result["metrics"]
    if REGISTRY[name].kind == "epochs":
        epochs = int(TINY[name][1])
        assert m["epochs_completed"] == epochs and len(rows) == epochs
        assert [int(r["epoch"]) for r in rows] == list(range(1, epochs + 1))
        assert 0.0 <= m["final_accuracy"] <= 1.0
        if REGISTRY[name].train is None:  # phased benchmarks report their own (seed 003: TTA) accuracy
            assert float(rows[-1]["val_acc"]) == pytest.approx(m["final_accuracy"])
        else:
            assert m["phase_seconds"]["total"] > 0
    else:
        steps = int(TINY[name][1])
        assert m["steps_completed"] == steps and m["final_accuracy"] is None
        spread = m["samples_per_second_spread"]
        assert spread["n"] == steps - m["warmup_steps"] and spread["p10"] <= spread["p50"] <= spread["p90"]
        assert result["benchmark"]["data"] == "synthetic"
    out = capsys.readouterr().out
    assert ":::MLLOG {" in out and '"key": "run_stop"' in out and '"key": "epoch_stop"' in out
    # a completed run's newest checkpoint state says so and points at no model, so nothing resumes it
    # (models are write-once and never deleted by the run: they expire by the bucket's lifecycle rule)
    states = sorted(run_dir.glob("checkpoints/state*.json"), key=lambda p: p.stat().st_mtime_ns)
    newest = json.loads(states[-1].read_text())
    assert newest["complete"] is True and newest["model_key"] is None


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
    _check_common(run_dir, result, "bilstm-sentiment")
    assert result["benchmark"]["data"] == str(study_files)
    # 90/10 split of the 120 labelled tweets: 108 for training, batch 16 -> 6 full steps
    assert result["metrics"]["steps_completed"] == 6
