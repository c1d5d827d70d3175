"""Expected agreement of examples/calibrate, computed independently of the
Go code (SciPy, krippendorff) for TestCalibrateExample.

The recorded judge (judge-session.jsonl, scripted by calibrateScores in
calibrate_cmd_test.go) answers score s with the alternatives s 70%, s-1 20%,
s+1 10%, so its weighted score is s - 0.1, normalised by 10.

    pip install scipy krippendorff && python3 calibrate_expected.py
"""
import json

import krippendorff
import numpy as np
from scipy import stats

correctness_raw = [9, 8, 2, 7, 3, 6, 9, 7, 5, 8, 1, 7]
helpfulness_raw = [8, 7, 3, 8, 2, 6, 9, 5, 4, 7, 2, 6]

labels = [json.loads(l) for l in open("../../../../examples/calibrate/labels.jsonl")]
ids = [json.loads(l)["id"] for l in open("../../../../examples/calibrate/cases.jsonl")]


def rater(metric, who, field):
    by = {l["case_id"]: l.get(field) for l in labels if l["metric"] == metric and l["rater"] == who}
    return [by[i] for i in ids]


for metric, raw, threshold in (("correctness", correctness_raw, 0.6), ("helpfulness", helpfulness_raw, 0.5)):
    judge = [(s - 0.1) / 10 for s in raw]
    raters = sorted({l["rater"] for l in labels if l["metric"] == metric})
    scores = [rater(metric, r, "score") for r in raters]
    human = np.mean(np.array(scores, dtype=float), axis=0)
    print(metric, "spearman", repr(stats.spearmanr(judge, human).statistic))
    print(metric, "kendall_tau_b", repr(stats.kendalltau(judge, human).statistic))
    print(metric, "pearson", repr(stats.pearsonr(judge, human).statistic))
    if len(raters) < 2:
        continue
    passes = [rater(metric, r, "pass") for r in raters]
    jp, hp = [], []
    for k in range(len(ids)):
        yes = sum(p[k] for p in passes)
        if 2 * yes == len(passes):
            continue
        jp.append(judge[k] >= threshold)
        hp.append(2 * yes > len(passes))
    jp, hp = np.array(jp, float), np.array(hp, float)
    po = np.mean(jp == hp)
    pe = np.mean(jp) * np.mean(hp) + np.mean(1 - jp) * np.mean(1 - hp)
    print(metric, "cohen_kappa", repr((po - pe) / (1 - pe)), "n", len(jp))
    print(metric, "alpha_raters_interval", repr(krippendorff.alpha(reliability_data=scores, level_of_measurement="interval")))
    pass_rows = [[float(v) for v in p] for p in passes]
    print(metric, "alpha_raters_nominal", repr(krippendorff.alpha(reliability_data=pass_rows, level_of_measurement="nominal")))
    judge_row = [1.0 if j >= threshold else 0.0 for j in judge]
    print(metric, "alpha_judge_and_raters_nominal", repr(krippendorff.alpha(reliability_data=pass_rows + [judge_row], level_of_measurement="nominal")))
