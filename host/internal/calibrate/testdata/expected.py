"""Expected agreement values for host/internal/calibrate's unit test
(TestCalibrateKnownValues), computed with SciPy and the krippendorff package
independently of the Go code. Regenerate with

    pip install scipy krippendorff && python3 expected.py

and paste the printed values into calibrate_test.go.
"""
import math

import krippendorff
import numpy as np
from scipy import stats

nan = float("nan")
judge = [0.9, 0.8, 0.3, 0.7, 0.2, 0.6, 0.95, 0.62, 0.5, 0.85, 0.1, 0.65]
errored = {8}  # the judge did not score c8
threshold = 0.6
ana_score = [5, 4, 2, 4, 1, 3, 5, 2, 3, 4, 1, 3]
ana_pass = [1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1]
ben_score = [5, 5, 1, 3, 2, 4, 4, 2, 2, 5, 1, nan]
ben_pass = [1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, nan]

paired = [i for i in range(12) if i not in errored]
human = [np.nanmean([ana_score[i], ben_score[i]]) for i in paired]
j = [judge[i] for i in paired]
print("spearman", repr(stats.spearmanr(j, human).statistic))
print("kendall", repr(stats.kendalltau(j, human).statistic))
print("pearson", repr(stats.pearsonr(j, human).statistic))

jp, hp = [], []
for i in paired:
    votes = [v for v in (ana_pass[i], ben_pass[i]) if not math.isnan(v)]
    yes = sum(votes)
    if yes * 2 == len(votes):
        continue  # a tie: no majority
    jp.append(1 if judge[i] >= threshold else 0)
    hp.append(1 if yes * 2 > len(votes) else 0)
jp, hp = np.array(jp), np.array(hp)
po = np.mean(jp == hp)
pe = np.mean(jp) * np.mean(hp) + np.mean(1 - jp) * np.mean(1 - hp)
print("kappa", repr((po - pe) / (1 - pe)), "n", len(jp))

print("alpha_raters_interval", repr(krippendorff.alpha(reliability_data=[ana_score, ben_score], level_of_measurement="interval")))
print("alpha_raters_nominal", repr(krippendorff.alpha(reliability_data=[ana_pass, ben_pass], level_of_measurement="nominal")))
judge_pass = [(1 if judge[i] >= threshold else 0) if i not in errored else nan for i in range(12)]
rows = [[ana_pass[i] if i not in errored else nan for i in range(12)], [ben_pass[i] if i not in errored else nan for i in range(12)], judge_pass]
print("alpha_judge_nominal", repr(krippendorff.alpha(reliability_data=rows, level_of_measurement="nominal")))
