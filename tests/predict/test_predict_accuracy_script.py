"""benchmarks/predict_accuracy.py's scoring, on tables made here: the shipped tables are too small for its
choice test, so it is checked on a table the model explains exactly, and on one it gets wrong."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from analysis.predict import calibration as cal
from analysis.predict.calibration import log_ratios, ratio
from analysis.predict.predict import gpu_specs
from infra.catalog import load_catalog

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "predict_accuracy.py"
GPUS = ("T4", "L4", "V100", "A100", "L40S", "H100")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("predict_accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def table(rates):
    """A calibration holding one table of `rates`, whose prior is the alpha the rates were made with."""
    rows = tuple(
        cal.Row("w", "vision", "mixed", gpu, 1, rate, "c", "u", "c", "2024-04-04", "Apache-2.0")
        for gpu, rate in rates.items()
    )
    return cal.Calibration(rows=rows, priors={(cal.ANY_FAMILY, "mixed"): 0.3}, efficiency=1.0, held=(), factor=1.5)


def model_rates(specs):
    """Every rate made by the model itself with alpha 0.3 from T4 = 100."""
    return {g: 100.0 * ratio(0.3, *log_ratios(specs["T4"], specs[g], "mixed")) for g in GPUS}


def test_a_table_the_model_explains_is_chosen_right_from_every_pair(script, catalog):
    # any two probes of rates the model made with alpha 0.3 fit alpha 0.3 back (the prior is 0.3 too), so the
    # rest is predicted exactly and each of the C(6, 2) = 15 sets chooses as the published rates do
    specs = gpu_specs(catalog)
    out = script.choice(table(model_rates(specs)), specs, catalog, min_set=6)
    assert out["sets"] == math.comb(6, 2) == 15
    assert out["same_choice"] == 1.0 and out["worst_miss_cost"] is None


def test_a_miss_is_counted_with_what_it_costs(script, catalog):
    # the GPU dearest per sample by the model's rates, G, is published 1000x faster: now it is the cheapest.
    # The 10 pairs without G predict G at its model rate (the dearest), so they choose M, the cheapest by the
    # model's rates, and miss at cost(M) / cost(G) - 1; the 5 pairs with G measure it and choose it.
    specs = gpu_specs(catalog)
    rates = model_rates(specs)
    prices = script.one_gpu_prices(catalog, GPUS)
    per_sample = {g: prices[g] / rates[g] for g in GPUS}
    dearest, cheapest = max(per_sample, key=per_sample.get), min(per_sample, key=per_sample.get)
    rates[dearest] *= 1000.0
    out = script.choice(table(rates), specs, catalog, min_set=6)
    assert out["same_choice"] == pytest.approx(5 / 15)
    miss = per_sample[cheapest] / (prices[dearest] / rates[dearest]) - 1
    assert out["worst_miss_cost"] == pytest.approx(miss) and out["median_miss_cost"] == pytest.approx(miss)


def test_tables_below_the_minimum_are_not_scored(script, catalog):
    specs = gpu_specs(catalog)
    out = script.choice(table({"T4": 100.0, "A100": 400.0}), specs, catalog, min_set=6)
    assert out["sets"] == 0 and out["table_sizes"] == {2: 1}
    assert any("not measurable" in line for line in script.verdicts({"all": _loo(0.1, 0.3)}, out))


def _loo(median, p90):
    return {"median_abs_error": median, "p90_abs_error": p90}
