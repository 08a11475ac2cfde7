"""The statistics behind the evidence tables: Wilson intervals, Fisher's exact test, risk ratios.

Exact and dependency-free: incident tables are small (hundreds to thousands of replies), where
normal approximations mislead.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (0, 0 when n is 0... as (nan, nan))."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact p-value of the 2x2 table [[a, b], [c, d]].

    Sums the probabilities of all tables with the same margins that are no more likely than the
    observed one (the usual two-sided definition, as in R and SciPy).
    """
    r1, r2, c1 = a + b, c + d, a + c
    n = r1 + r2
    if n == 0:
        return 1.0
    lo, hi = max(0, c1 - r2), min(c1, r1)

    def logp(x: int) -> float:
        return _log_comb(r1, x) + _log_comb(r2, c1 - x) - _log_comb(n, c1)

    observed = logp(a)
    eps = 1e-7  # relative tolerance for ties, as SciPy uses
    total = 0.0
    for x in range(lo, hi + 1):
        lp = logp(x)
        if lp <= observed + eps:
            total += math.exp(lp)
    return min(1.0, total)


def risk_ratio(k1: int, n1: int, k0: int, n0: int) -> float:
    """Rate in group 1 over rate in group 0 (inf when the baseline rate is 0 and group 1's is not)."""
    if n1 == 0 or n0 == 0:
        return math.nan
    r1, r0 = k1 / n1, k0 / n0
    if r0 == 0:
        return math.inf if r1 > 0 else math.nan
    return r1 / r0


def two_proportions(k1: int, n1: int, k0: int, n0: int, alpha: float = 0.05) -> dict:
    """Everything a bug report needs to say whether two rates differ."""
    p = fisher_exact(k1, n1 - k1, k0, n0 - k0)
    return {
        "rate_a": k1 / n1 if n1 else math.nan, "ci_a": wilson(k1, n1),
        "rate_b": k0 / n0 if n0 else math.nan, "ci_b": wilson(k0, n0),
        "risk_ratio": risk_ratio(k1, n1, k0, n0), "p_value": p,
        "verdict": "significant" if p < alpha else "within noise",
    }
