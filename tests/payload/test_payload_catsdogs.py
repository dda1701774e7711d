"""Seed 003's workload (catsdogs-resnet50) on tiny generated JPEGs, weights=None."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest
from payload_helpers import check_completed_run, check_finished_outputs, isolate_payload_env, only_result, run_payload
from PIL import Image

from payload.benchmarks import get
from payload.benchmarks.catsdogs_resnet50 import DataLayoutError, find_images, one_cycle_class
from payload.schema import validate_result


def _jpeg(path, rng, dog: bool):
    # dogs bright, cats dark: learnable, so the accuracy is not a coin toss by construction
    base = 200 if dog else 40
    pixels = np.clip(rng.normal(base, 20, (40, 48, 3)), 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, "JPEG")


def fastai_layout(root, rng, per_class=8, valid_per_class=4):
    for part, n in (("train", per_class), ("valid", valid_per_class)):
        for name in ("cats", "dogs"):
            for i in range(n):
                _jpeg(root / "dogscats" / part / name / f"{name[:-1]}.{i}.jpg", rng, name == "dogs")
    return root


def kaggle_layout(root, rng, per_class=12):
    for name in ("cat", "dog"):
        for i in range(per_class):
            _jpeg(root / "train" / f"{name}.{i}.jpg", rng, name == "dog")
    (root / "test1").mkdir()
    _jpeg(root / "test1" / "1.jpg", rng, True)  # unlabelled test set: ignored
    return root


def test_fastai_layout_is_read_with_its_labels(tmp_path):
    root = fastai_layout(tmp_path, np.random.default_rng(0))
    layout, xt, yt, xv, yv = find_images(str(root))
    assert layout == "fastai-dogscats"
    assert len(xt) == 16 and len(xv) == 8
    for path, label in zip(xt + xv, yt + yv):
        assert ("/dogs/" in path) == (label == 1)


def test_kaggle_layout_holds_out_a_seeded_fraction(tmp_path):
    root = kaggle_layout(tmp_path, np.random.default_rng(0))
    layout, xt, yt, xv, yv = find_images(str(root), val_fraction=0.25, seed=7)
    assert layout == "kaggle-dogs-vs-cats"
    assert len(xv) == 6 and len(xt) == 18 and not set(xt) & set(xv)
    for path, label in zip(xt + xv, yt + yv):
        assert path.rsplit("/", 1)[1].startswith("dog" if label else "cat")
    assert find_images(str(root), val_fraction=0.25, seed=7)[3] == xv  # same seed, same split


def test_a_directory_in_no_known_layout_says_which_layouts_work(tmp_path):
    (tmp_path / "PetImages" / "Cat").mkdir(parents=True)
    with pytest.raises(DataLayoutError, match="train/cats/\\*.jpg.*train/cat.0.jpg"):
        find_images(str(tmp_path))


def test_one_cycle_warms_up_then_anneals_to_a_tiny_rate():
    import keras

    sched = one_cycle_class()(3e-3, total_steps=100, pct_start=0.3)
    lr = [float(keras.ops.convert_to_numpy(sched(s))) for s in range(101)]
    assert lr[0] == pytest.approx(3e-3 / 25)
    assert max(lr) == pytest.approx(3e-3) and lr.index(max(lr)) == 30
    assert all(a <= b for a, b in zip(lr[:30], lr[1:31]))  # up
    assert all(a >= b for a, b in zip(lr[30:], lr[31:]))  # down
    assert lr[100] == pytest.approx(3e-3 / 25e4)
    assert type(sched).from_config(sched.get_config()).get_config() == sched.get_config()


# The least run that still times all three phases and a rate: two training steps per epoch (the first is
# warm-up), one validation batch, one frozen and one unfrozen epoch, one augmented TTA pass.
TRAIN_PER_CLASS, VALID_PER_CLASS, BATCH = 4, 2, 4


@pytest.fixture(scope="module")
def fastai_run(tmp_path_factory):
    """One training run on tiny JPEGs in fast.ai's layout (ResNet-50 costs a minute or more on a CPU), shared by
    the tests that check it: (run dir, result, the run's stdout). The Kaggle layout's loader is tested above."""
    tmp = tmp_path_factory.mktemp("catsdogs")
    data = fastai_layout(tmp / "data", np.random.default_rng(1), TRAIN_PER_CLASS, VALID_PER_CLASS)
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out):
        isolate_payload_env(mp, tmp / "spool")
        rc = run_payload(
            "--benchmark",
            "catsdogs-resnet50",
            "--results",
            str(tmp / "out"),
            "--stack",
            "cd-fastai",
            "--data",
            str(data),
            "--batch-size",
            str(BATCH),
            "--param",
            "weights=none,image_size=32,epochs=2,frozen_epochs=1,tta_steps=1,val_fraction=0.25",
        )
    assert rc == 0, out.getvalue()[-3000:]
    return (*only_result(tmp / "out", "cd-fastai"), out.getvalue())


def test_catsdogs_runs_three_timed_phases_on_tiny_jpegs(fastai_run):
    path, result, _ = fastai_run
    validate_result(result)
    m = result["metrics"]
    phases = m["phase_seconds"]
    assert set(phases) == {"frozen", "unfrozen", "tta", "total"}
    assert all(v > 0 for v in phases.values())
    assert phases["total"] == pytest.approx(phases["frozen"] + phases["unfrozen"] + phases["tta"], abs=0.01)
    assert m["epochs_completed"] == 2 and 0.0 <= m["final_accuracy"] <= 1.0
    assert m["steps_completed"] == 2 * (2 * TRAIN_PER_CLASS // BATCH)
    assert phases["total"] <= m["train_seconds"] + 0.01
    rows = (path / "epochs.csv").read_text().splitlines()
    assert len(rows) == 3  # header + one row per epoch across both phases
    events = [json.loads(line)["event"] for line in (path / "events.jsonl").read_text().splitlines()]
    assert events.count("epoch_end") == 2


def test_catsdogs_run_is_a_complete_benchmark_run(fastai_run):
    """What test_payload_benchmarks checks of every other benchmark's tiny run, on this one."""
    path, result, out = fastai_run
    rows = check_completed_run(path, result, "catsdogs-resnet50")
    assert [int(r["epoch"]) for r in rows] == [1, 2]
    assert result["benchmark"]["data"] == str(path.parents[3] / "data")
    check_finished_outputs(path, out)


def test_registered_with_its_study():
    bench = get("catsdogs-resnet50")
    assert "seed 003" in bench.study and bench.defaults["weights"] == "imagenet"
    assert bench.train is not None and not bench.resumable
