"""The statistics behind the evidence tables: Wilson intervals, Fisher's exact test, risk ratios and
differences with their intervals, Benjamini–Hochberg q-values.

Exact where it matters and dependency-free: incident tables are small (hundreds to thousands of
replies), where normal approximations of a single rate mislead.
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


def risk_ratio_ci(k1: int, n1: int, k0: int, n0: int, z: float = Z95) -> tuple[float, float]:
    """95% interval of the risk ratio on the log scale (Katz), as SciPy's `relative_risk`.

    A zero count leaves the log ratio unbounded on one side; half a reply is then added to every
    cell (Haldane) for the bound on the other side, and the open side is the ratio itself: no
    corrupted reply in group 1 gives 0 (0 to x), none in group 0 gives inf (x to inf), so the ratio
    always lies inside its interval.
    """
    if n1 == 0 or n0 == 0 or (k1 == 0 and k0 == 0):
        return (math.nan, math.nan)
    zero1, zero0 = k1 == 0, k0 == 0
    if zero1 or zero0:
        k1, n1, k0, n0 = k1 + 0.5, n1 + 1, k0 + 0.5, n0 + 1
    rr = (k1 / n1) / (k0 / n0)
    se = math.sqrt(1 / k1 - 1 / n1 + 1 / k0 - 1 / n0)
    return (0.0 if zero1 else rr * math.exp(-z * se), math.inf if zero0 else rr * math.exp(z * se))


def rate_difference_ci(k1: int, n1: int, k0: int, n0: int, z: float = Z95) -> tuple[float, float]:
    """95% interval of rate 1 minus rate 0: Newcombe's hybrid score interval (his method 10).

    Built from the two Wilson intervals, so it stays inside [-1, 1] and behaves at rates of 0 and 1,
    where the Wald interval collapses.
    """
    if n1 == 0 or n0 == 0:
        return (math.nan, math.nan)
    p1, p0 = k1 / n1, k0 / n0
    l1, u1 = wilson(k1, n1, z)
    l0, u0 = wilson(k0, n0, z)
    d = p1 - p0
    lo = d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    return (max(-1.0, lo), min(1.0, hi))


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini–Hochberg q-values (R's `p.adjust(p, "BH")`), in the order of `p_values`.

    q of the i-th smallest of m p-values is min over j >= i of m * p_(j) / j, capped at 1: the running
    minimum from the largest p down keeps the q-values in the order of the p-values. NaN p-values
    are not comparisons: they stay NaN and do not count in m. Controls the false discovery rate for
    independent or positively dependent tests (the buckets of one dimension against the rest are).
    """
    ranked = sorted((p, i) for i, p in enumerate(p_values) if p is not None and not math.isnan(p))
    m = len(ranked)
    q = [math.nan] * len(p_values)
    running = 1.0
    for rank in range(m, 0, -1):
        p, i = ranked[rank - 1]
        running = min(running, m * p / rank)
        q[i] = running
    return q


def two_proportions(k1: int, n1: int, k0: int, n0: int, alpha: float = 0.05) -> dict:
    """Everything a bug report needs to say whether rate 1 (k1 of n1) differs from rate 0 (k0 of n0).

    Fisher's exact p, the difference of the rates and the risk ratio, each with its 95% interval.
    """
    p = fisher_exact(k1, n1 - k1, k0, n0 - k0)
    return {
        "rate_a": k1 / n1 if n1 else math.nan,
        "ci_a": wilson(k1, n1),
        "rate_b": k0 / n0 if n0 else math.nan,
        "ci_b": wilson(k0, n0),
        "difference": (k1 / n1 - k0 / n0) if n1 and n0 else math.nan,
        "difference_ci": rate_difference_ci(k1, n1, k0, n0),
        "risk_ratio": risk_ratio(k1, n1, k0, n0),
        "risk_ratio_ci": risk_ratio_ci(k1, n1, k0, n0),
        "p_value": p,
        "verdict": "significant" if p < alpha else "within noise",
    }
