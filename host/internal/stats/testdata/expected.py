"""Expected values for host/internal/stats tests, computed independently of
the Go code with SciPy and the krippendorff package.

Regenerate (needs Python 3 with `pip install scipy krippendorff`):

    python3 expected.py > expected.json

The Go tests read expected.json; they never run Python.
"""
import json
import math

import krippendorff
import numpy as np
import scipy
from scipy import stats

# Judge scores (0-10) against human labels (1-5), with ties on both sides.
CORR = {
    "judge_vs_human": (
        [7, 8, 3, 9, 5, 6, 2, 8, 7, 4, 10, 1, 6, 5, 9],
        [4, 4, 2, 5, 3, 3, 1, 5, 3, 2, 5, 1, 4, 2, 4],
    ),
    "negative": ([1, 2, 3, 4, 5, 6], [6.5, 5, 5, 3, 2.5, 1]),
    "weak_with_ties": ([1, 1, 2, 2, 3, 3, 4, 4], [2, 1, 2, 4, 1, 3, 3, 2]),
}

# Pass/fail of judge and human.
KAPPA = {
    "mostly_agree": (
        [1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0],
        [1, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 0],
    ),
    "worse_than_chance": ([1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 1, 0]),
}

# Krippendorff: rows are raters, columns units, nan = missing.
nan = float("nan")
ALPHA = {
    "three_raters_missing": [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ],
    "two_raters_complete": [
        [7, 8, 3, 9, 5, 6, 2, 8],
        [6, 8, 4, 9, 4, 6, 3, 7],
    ],
}

WILSON = [(0, 10), (10, 10), (7, 10), (42, 120), (1, 3)]

PAIRED = {
    # Exact (<= 20 non-zero differences).
    "small_shift": (
        [7, 6, 8, 5, 9, 6, 7, 8, 5, 6, 7, 8],
        [6, 6, 7, 4, 8, 6, 6, 7, 5, 5, 6, 8],
    ),
    "noise": ([5, 6, 7, 5, 6, 7, 5, 6], [6, 5, 7, 6, 5, 7, 4, 7]),
    # Five pairs, all lower: the smallest two-sided p of five pairs is 2/32.
    "five_all_lower": ([8, 8, 8, 8, 8], [2, 2, 2, 2, 2]),
}

BOOT_MEAN = [3.0, 7.5, 6.0, 8.0, 2.0, 9.5, 7.0, 5.5, 6.5, 8.0, 4.0, 7.0, 6.0, 9.0, 5.0, 6.5, 7.5, 8.5, 3.5, 6.0]


def mean_diff(x, y, axis=-1):
    return np.mean(y - x, axis=axis)


out = {"scipy_version": scipy.__version__, "correlation": {}, "kappa": {}, "alpha": {}, "wilson": [], "paired": {}}

for name, (x, y) in CORR.items():
    out["correlation"][name] = {
        "x": x,
        "y": y,
        "pearson": stats.pearsonr(x, y).statistic,
        "spearman": stats.spearmanr(x, y).statistic,
        "kendall_tau_b": stats.kendalltau(x, y, variant="b").statistic,
        "ranks_x": stats.rankdata(x, method="average").tolist(),
    }

for name, (a, b) in KAPPA.items():
    a_, b_ = np.array(a), np.array(b)
    cats = sorted(set(a) | set(b))
    table = np.array([[np.sum((a_ == i) & (b_ == j)) for j in cats] for i in cats], dtype=float)
    n = table.sum()
    po = np.trace(table) / n
    pe = (table.sum(axis=1) @ table.sum(axis=0)) / n**2
    out["kappa"][name] = {"a": a, "b": b, "kappa": (po - pe) / (1 - pe)}

for name, data in ALPHA.items():
    arr = np.array(data, dtype=float)
    units = [[v for v in arr[:, u] if not math.isnan(v)] for u in range(arr.shape[1])]
    out["alpha"][name] = {
        "units": units,
        "interval": krippendorff.alpha(reliability_data=arr, level_of_measurement="interval"),
        "nominal": krippendorff.alpha(reliability_data=arr, level_of_measurement="nominal"),
    }

for k, n in WILSON:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    out["wilson"].append({"successes": k, "n": n, "low": ci.low, "high": ci.high})

for name, (a, b) in PAIRED.items():
    res = stats.permutation_test(
        (np.array(a, float), np.array(b, float)),
        mean_diff,
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=np.inf,
        vectorized=True,
    )
    one_sided = {
        alt: stats.permutation_test((np.array(a, float), np.array(b, float)), mean_diff, permutation_type="samples", alternative=alt, n_resamples=np.inf, vectorized=True).pvalue
        for alt in ("less", "greater")
    }
    out["paired"][name] = {"a": a, "b": b, "mean_difference": float(np.mean(np.array(b) - np.array(a))), "p_value": res.pvalue, "p_value_less": one_sided["less"], "p_value_greater": one_sided["greater"]}

# Above the exact limit: a Monte Carlo p-value with many resamples; the Go
# test compares with a tolerance.
rng = np.random.default_rng(7)
a = rng.integers(3, 9, size=60).astype(float)
b = a + rng.choice([-1.0, 0.0, 0.0, 1.0, 1.0], size=60)
res = {
    alt: stats.permutation_test((a, b), mean_diff, permutation_type="samples", alternative=alt, n_resamples=200000, vectorized=True, random_state=1).pvalue
    for alt in ("two-sided", "less", "greater")
}
out["paired"]["large_monte_carlo"] = {"a": a.tolist(), "b": b.tolist(), "mean_difference": float(np.mean(b - a)), "p_value": res["two-sided"], "p_value_less": res["less"], "p_value_greater": res["greater"]}

# Percentile bootstrap of a mean, with many resamples so that only the
# Monte Carlo error of the bounds (a few thousandths here) separates it
# from the Go result.
boot = stats.bootstrap((np.array(BOOT_MEAN),), np.mean, n_resamples=200000, method="percentile", confidence_level=0.95, random_state=3, vectorized=True)
out["bootstrap_mean"] = {"xs": BOOT_MEAN, "mean": float(np.mean(BOOT_MEAN)), "low": boot.confidence_interval.low, "high": boot.confidence_interval.high}

bx, by = CORR["judge_vs_human"]
boot = stats.bootstrap((np.array(bx, float), np.array(by, float)), lambda x, y: stats.pearsonr(x, y).statistic, paired=True, vectorized=False, n_resamples=20000, method="percentile", random_state=5)
out["bootstrap_pearson"] = {"low": boot.confidence_interval.low, "high": boot.confidence_interval.high}

print(json.dumps(out, indent=1))
