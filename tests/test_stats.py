"""The statistics module against reference values (R / SciPy)."""

import math

import pytest

from forensics.analysis.stats import fisher_exact, risk_ratio, two_proportions, wilson


def test_wilson_reference_values():
    lo, hi = wilson(22, 100)
    assert lo == pytest.approx(0.1500, abs=1e-4) and hi == pytest.approx(0.3107, abs=1e-4)
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_fisher_reference_values():
    # scipy.stats.fisher_exact([[8, 2], [1, 5]]) -> p = 0.03496503...
    assert fisher_exact(8, 2, 1, 5) == pytest.approx(0.034965, abs=1e-6)
    # the tea-tasting table
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.485714, abs=1e-6)
    assert fisher_exact(0, 0, 0, 0) == 1.0


def test_22_vs_17_percent_is_noise_at_small_n_and_real_at_large_n():
    small = two_proportions(22, 100, 17, 100)
    assert small["verdict"] == "within noise" and small["p_value"] > 0.3
    large = two_proportions(2200, 10000, 1700, 10000)
    assert large["verdict"] == "significant" and large["p_value"] < 1e-10


def test_risk_ratio_edges():
    assert risk_ratio(3, 10, 1, 10) == pytest.approx(3.0)
    assert risk_ratio(1, 10, 0, 10) == math.inf
    assert math.isnan(risk_ratio(0, 0, 1, 10))
