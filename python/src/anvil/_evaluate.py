"""evaluate and assert_passes: one anvil-host run over the given cases.

The cases go to anvil-host as a JSONL dataset (`run --input`); the
verdicts, scores and reasons come back from summary.json and results.jsonl,
the files a CI gate reads. Everything about a run (judges, caching,
plugins, the sandbox, the gate) is anvil-host's; this module only carries
the cases in and the results out, and never turns a run it could not read
into a pass.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from ._errors import AnvilError
from ._host import host_command

PathLike = Union[str, "os.PathLike[str]"]

# anvil-host's exit codes (docs/cli.md): the run wrote a summary for these.
_EXIT_PASSED, _EXIT_FAILED, _EXIT_USAGE, _EXIT_UNVERIFIED = 0, 1, 2, 3


@dataclass(frozen=True)
class MetricResult:
    """One metric's outcome on one case, as results.jsonl has it."""

    metric: str
    kind: str
    # "passed", "failed" (scored below the threshold), "error" (no score)
    # or "skipped" (a field or judge the metric needs is missing).
    status: str
    # Whether the metric gates the run (gate: false metrics are informational).
    gated: bool
    score: Optional[float]
    threshold: float
    reason: str
    # The plugin's, judge's or host's error when status is "error": code,
    # message, and where known plugin, digest, field.
    error: Optional[Dict[str, Any]]
    details: Dict[str, Any]
    # The whole line as written: usage, latency, samples, panel votes.
    raw: Dict[str, Any] = field(repr=False)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def why(self) -> str:
        """The reason, or for an error what the error says."""
        if self.error:
            return _error_text(self.error)
        return self.reason


@dataclass(frozen=True)
class CaseResult:
    """Every metric's outcome on one case."""

    id: str
    metrics: List[MetricResult]
    # The case as given to evaluate (None for a case the host named).
    case: Optional[Mapping[str, Any]] = field(default=None, repr=False)

    def metric(self, name: str) -> MetricResult:
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError("case %s has no metric %r (it has %s)" % (self.id, name, ", ".join(m.metric for m in self.metrics)))


@dataclass(frozen=True)
class Failure:
    """One gated metric that did not pass on one case."""

    case_id: str
    metric: str
    status: str  # "failed" or "error"
    score: Optional[float]
    threshold: float
    reason: str

    def __str__(self) -> str:
        # The same words as anvil-host's Go API (host.Failure) and anviltest.
        score = "no score" if self.score is None else "score %.3f" % self.score
        return "case %s, metric %s: %s (%s, threshold %.2f): %s" % (
            json.dumps(self.case_id, ensure_ascii=False), self.metric, self.status, score, self.threshold, self.reason)


@dataclass(frozen=True)
class Result:
    """An evaluation's outcome: the gate's verdict, every case's scores and
    reasons, and the summary as summary.json holds it."""

    # "passed", "failed", "unverified" (nothing or too little verified) or
    # "incomplete" (the run stopped early).
    verdict: str
    cases: List[CaseResult]
    summary: Dict[str, Any] = field(repr=False)
    # anvil-host's exit code: 0 passed, 1 failed, 3 could not verify.
    exit_code: int = 0
    # The directory holding summary.json, results.jsonl, junit.xml and
    # report.html, when evaluate was given one to keep.
    output_dir: Optional[str] = None
    # What anvil-host printed: the per-metric table, and its warnings.
    stdout: str = field(default="", repr=False)
    stderr: str = field(default="", repr=False)

    @property
    def passed(self) -> bool:
        """Whether the run passed as a CI gate would: every gated metric
        verified and at or above its threshold on every case."""
        return self.verdict == "passed"

    @property
    def unverified(self) -> List[str]:
        """Why the gate could not verify the run (a metric that skipped
        every case for want of a judge key, say)."""
        return list(self.summary.get("unverified") or [])

    def case(self, case_id: str) -> CaseResult:
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError("no case %r in the results" % case_id)

    def failures(self) -> List[Failure]:
        """Every gated metric that failed its threshold or errored, case by
        case. A skipped metric is not a failure: a metric that skipped
        everything is in unverified instead."""
        out = []
        for c in self.cases:
            for m in c.metrics:
                if m.gated and m.status in ("failed", "error"):
                    out.append(Failure(c.id, m.metric, m.status, m.score, m.threshold, m.why()))
        return out

    def problems(self) -> List[str]:
        """What fails the gate, one line each: every failure, every reason
        the run could not be verified, and a stop before the end."""
        lines = [str(f) for f in self.failures()]
        lines += ["could not verify: " + why for why in self.unverified]
        incomplete = self.summary.get("incomplete")
        if incomplete:
            lines.append("the run stopped before the end: %s" % incomplete.get("reason", ""))
        if not lines and not self.passed:
            lines.append("the run's verdict is %s" % self.verdict)
        return lines


def evaluate(
    config: PathLike,
    cases: Iterable[Mapping[str, Any]],
    *,
    output_dir: Optional[PathLike] = None,
    cache: Optional[str] = None,
    concurrency: Optional[int] = None,
    env: Optional[Mapping[str, str]] = None,
    host: Optional[str] = None,
    timeout: Optional[float] = None,
) -> Result:
    """Evaluate cases with every metric of the anvil.yaml at config.

    cases are dicts with the dataset's fields: id, input, actual_output,
    expected_output, context, retrieval_context, tools_called,
    expected_tools, and any other (usable in a metric's
    evaluation_params); a conversation has turns ([{role, content}]),
    scenario, expected_outcome and chatbot_role instead of input and
    actual_output. The config's own dataset is not read. Paths in the
    config (plugins, recordings, the judge store) are relative to it.

    Returns the Result whether the gate passed or not. Raises AnvilError
    when nothing was evaluated: a bad config or case (naming file, line and
    field), no anvil-host, or a run that wrote no summary.

    output_dir keeps summary.json, results.jsonl, junit.xml and
    report.html there (default: a temporary directory, removed). cache is
    anvil-host's --cache (off, rw, replay); env the environment the run
    sees (default: this process's, where the judge keys are); host an
    anvil-host to run instead of the installed one; timeout in seconds.
    """
    config = os.fspath(config)
    if not os.path.isfile(config):
        raise AnvilError("config %s: no such file" % config)
    work = tempfile.mkdtemp(prefix="anvil-evaluate-")
    try:
        dataset = os.path.join(work, "cases.jsonl")
        given = _write_cases(dataset, cases)
        out = os.fspath(output_dir) if output_dir is not None else os.path.join(work, "out")
        args = ["run", "-c", config, "--input", dataset, "-o", out, "--no-progress"]
        if cache is not None:
            args += ["--cache", cache]
        if concurrency is not None:
            args += ["--concurrency", str(int(concurrency))]
        try:
            proc = subprocess.run(
                host_command(args, host), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise AnvilError("anvil-host run: no result after %s s" % timeout) from e
        except OSError as e:
            raise AnvilError("anvil-host run: %s" % e) from e
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        if proc.returncode not in (_EXIT_PASSED, _EXIT_FAILED, _EXIT_UNVERIFIED):
            raise AnvilError(_failure_text(proc.returncode, stderr), proc.returncode, stderr)
        summary_path = os.path.join(out, "summary.json")
        if not os.path.isfile(summary_path):
            # Exit 3 also means an I/O failure before any summary.
            raise AnvilError(_failure_text(proc.returncode, stderr), proc.returncode, stderr)
        summary = _read_json(summary_path)
        results = _read_results(os.path.join(out, "results.jsonl"), given)
        return Result(
            verdict=str(summary.get("verdict", "")), cases=results, summary=summary, exit_code=proc.returncode,
            output_dir=out if output_dir is not None else None, stdout=stdout, stderr=stderr,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def assert_passes(config: PathLike, cases: Iterable[Mapping[str, Any]], **kwargs: Any) -> Result:
    """evaluate, then fail (AssertionError) unless the gate passed.

    The message has a line for each case that failed a gated metric — the
    case, the metric, the score, the threshold and the metric's own reason
    — and one for each reason nothing could be verified: a run that
    verified nothing (no judge key, every case skipped) fails, so a green
    test means something was checked. Returns the Result for further
    checks. Takes evaluate's keyword arguments.
    """
    __tracebackhide__ = True  # pytest: show the test's line, not this one
    result = evaluate(config, cases, **kwargs)
    if result.passed:
        return result
    raise AssertionError("\n".join("anvil: " + line for line in result.problems()))


def _write_cases(path: str, cases: Iterable[Mapping[str, Any]]) -> Dict[str, Mapping[str, Any]]:
    """Writes cases as JSONL; returns them by id (those that have one)."""
    if isinstance(cases, (str, bytes)) or isinstance(cases, Mapping):
        raise AnvilError("cases: want an iterable of dicts (one per case), got %s" % type(cases).__name__)
    given: Dict[str, Mapping[str, Any]] = {}
    with open(path, "w", encoding="utf-8") as f:
        for i, case in enumerate(cases):
            if not isinstance(case, Mapping):
                raise AnvilError("case %d: want a dict of the dataset's fields, got %s" % (i, type(case).__name__))
            try:
                line = json.dumps(case, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
            except (TypeError, ValueError) as e:
                raise AnvilError("case %d (id %r): %s" % (i, case.get("id"), e)) from e
            f.write(line + "\n")
            if isinstance(case.get("id"), str):
                given[case["id"]] = case
    return given


def _read_json(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, parse_constant=_no_constant)
    except (OSError, ValueError) as e:
        raise AnvilError("%s: %s" % (path, e)) from e


def _read_results(path: str, given: Mapping[str, Mapping[str, Any]]) -> List[CaseResult]:
    out = []
    if not os.path.isfile(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line, parse_constant=_no_constant)
                metrics = [_metric(m) for m in rec["metrics"]]
                case_id = str(rec["case_id"])
            except (ValueError, KeyError, TypeError) as e:
                raise AnvilError("%s:%d: %s" % (path, n, e)) from e
            out.append(CaseResult(case_id, metrics, given.get(case_id)))
    # In the order the cases were given (the host writes them as they finish).
    order = {cid: i for i, cid in enumerate(given)}
    out.sort(key=lambda c: order.get(c.id, len(order)))
    return out


def _metric(m: Dict[str, Any]) -> MetricResult:
    score = m.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)):
        raise ValueError("metric %s: score %r is not a number" % (m.get("metric"), score))
    return MetricResult(
        metric=str(m["metric"]), kind=str(m.get("kind", "")), status=str(m["status"]), gated=bool(m.get("gated", False)),
        score=None if score is None else float(score), threshold=float(m.get("threshold", 0)),
        reason=str(m.get("reason", "")), error=m.get("error"), details=m.get("details") or {}, raw=m,
    )


def _error_text(e: Mapping[str, Any]) -> str:
    # As abi.Error.Error() words it.
    s = "%s: %s" % (e.get("code", ""), e.get("message", ""))
    plugin, digest = e.get("plugin", ""), e.get("digest", "")
    if plugin and digest:
        short = digest[:19] if digest.startswith("sha256:") and len(digest) > 19 else digest
        s = "plugin %s@%s: %s" % (plugin, short, s)
    elif plugin:
        s = "plugin %s: %s" % (plugin, s)
    if e.get("stderr"):
        s += "\nguest stderr:\n" + e["stderr"]
    return s


def _failure_text(code: int, stderr: str) -> str:
    what = {_EXIT_USAGE: "config, dataset or usage error; nothing evaluated", 130: "interrupted"}.get(code, "exit %d" % code)
    text = stderr.strip()
    return "anvil-host run: %s%s" % (what, (":\n" + text) if text else "")


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def write_cases(path: PathLike, cases: Iterable[Mapping[str, Any]]) -> None:
    """Writes cases as a JSONL dataset anvil-host run reads (--input)."""
    _write_cases(os.fspath(path), cases)


def read_results(output_dir: PathLike) -> Result:
    """Reads the Result of an earlier run from its output directory
    (summary.json and results.jsonl)."""
    out = os.fspath(output_dir)
    summary = _read_json(os.path.join(out, "summary.json"))
    verdict = str(summary.get("verdict", ""))
    code = {"passed": _EXIT_PASSED, "failed": _EXIT_FAILED}.get(verdict, _EXIT_UNVERIFIED)
    return Result(verdict=verdict, cases=_read_results(os.path.join(out, "results.jsonl"), {}), summary=summary,
                  exit_code=code, output_dir=out)

