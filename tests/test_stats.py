"""The statistics module against reference values (R / SciPy)."""

import math

import pytest

from forensics.analysis.stats import (
    benjamini_hochberg,
    fisher_exact,
    rate_difference_ci,
    risk_ratio,
    risk_ratio_ci,
    two_proportions,
    wilson,
)


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
    # the intervals say the same: both straddle no difference
    assert small["difference"] == pytest.approx(0.05)
    lo, hi = small["difference_ci"]
    assert lo < 0 < hi
    assert small["risk_ratio_ci"][0] < 1 < small["risk_ratio_ci"][1]
    large = two_proportions(2200, 10000, 1700, 10000)
    assert large["verdict"] == "significant" and large["p_value"] < 1e-10
    assert 0 < large["difference_ci"][0] < 0.05 < large["difference_ci"][1]
    assert large["risk_ratio_ci"][0] > 1


def test_bh_against_reference_values():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") -> 0.02 0.04 0.04 0.02 (sorted: m*p/i = .02 .02 .04 .04)
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # monotonicity: m*p/i is .04 .04 .028 .5; the running minimum from the top makes the first two .028
    assert benjamini_hochberg([0.01, 0.02, 0.021, 0.5]) == pytest.approx([0.028, 0.028, 0.028, 0.5])
    # R: p.adjust(c(.01, .02, .03, .04, .05), "BH") -> all 0.05
    assert benjamini_hochberg([0.05, 0.04, 0.03, 0.02, 0.01]) == pytest.approx([0.05] * 5)
    # capped at 1; NaN is no comparison: it stays NaN and m is 2, not 3
    q = benjamini_hochberg([0.9, math.nan, 0.6])
    assert q[0] == pytest.approx(0.9) and math.isnan(q[1]) and q[2] == pytest.approx(0.9)
    assert benjamini_hochberg([]) == []
    assert benjamini_hochberg([0.7, 0.8]) == pytest.approx([0.8, 0.8])


def test_bh_matches_scipy_on_many_values():
    stats = pytest.importorskip("scipy.stats")
    import random

    rnd = random.Random(5)
    p = [rnd.random() ** 3 for _ in range(40)] + [0.0, 1.0, 0.5, 0.5]
    assert benjamini_hochberg(p) == pytest.approx(list(stats.false_discovery_control(p)), abs=1e-12)
    q = benjamini_hochberg(p)
    order = sorted(range(len(p)), key=p.__getitem__)
    assert all(q[a] <= q[b] for a, b in zip(order, order[1:])) and all(x >= y for x, y in zip(q, p))


def test_rate_difference_ci_newcombe_table_ii():
    # Newcombe (1998), Statistics in Medicine 17:873, Table II, method 10
    for (k1, n1, k0, n0), (lo, hi) in {
        (56, 70, 48, 80): (0.0524, 0.3339),
        (9, 10, 3, 10): (0.1705, 0.8090),
        (5, 56, 0, 29): (-0.0381, 0.1926),
        (0, 10, 0, 20): (-0.1611, 0.2775),
    }.items():
        got = rate_difference_ci(k1, n1, k0, n0)
        assert got == (pytest.approx(lo, abs=1e-4), pytest.approx(hi, abs=1e-4))


def test_risk_ratio_ci_katz():
    # by hand: RR 22/100 over 17/100 = 1.2941, se(log RR) = sqrt(1/22 - 1/100 + 1/17 - 1/100) = 0.29030
    assert risk_ratio_ci(22, 100, 17, 100) == (pytest.approx(0.73260, abs=1e-4), pytest.approx(2.28604, abs=1e-4))
    # a zero cell: Haldane's half reply gives finite bounds around the corrected ratio
    # a zero cell: the bound away from it from the Haldane-corrected table (5.5/21 over 0.5/21), the
    # other the ratio itself, so the ratio (inf, or 0) lies inside its interval
    lo, hi = risk_ratio_ci(5, 20, 0, 20)
    assert 0 < lo < 11.0 and hi == math.inf == risk_ratio(5, 20, 0, 20)
    lo, hi = risk_ratio_ci(0, 40, 6, 40)
    assert lo == 0 == risk_ratio(0, 40, 6, 40) and 0 < hi < 2
    assert all(math.isnan(x) for x in risk_ratio_ci(0, 10, 0, 10))


def test_risk_ratio_edges():
    assert risk_ratio(3, 10, 1, 10) == pytest.approx(3.0)
    assert risk_ratio(1, 10, 0, 10) == math.inf
    assert math.isnan(risk_ratio(0, 0, 1, 10))
