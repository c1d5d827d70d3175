#!/usr/bin/env python3
"""report.py: the Anvil GitHub Action's annotations and job summary (action.yml).

From a run's output directory (summary.json, results.jsonl) it prints one
workflow command per failing case -- ::error for a gated failure or an
error, ::warning for an ungated failure -- on the case's line of the
dataset, at most ANVIL_MAX_ANNOTATIONS of them, and appends a Markdown job
summary to $GITHUB_STEP_SUMMARY: the verdict, the metrics, the failing
cases.

Environment:
  ANVIL_OUTPUT_DIR       the run's output directory (required)
  ANVIL_CONFIG           the config the run read (for its dataset)
  ANVIL_DATASET          the dataset, when not the config's (or --input's)
  ANVIL_ARGS             the run's extra arguments (an --input there is the dataset)
  ANVIL_MAX_ANNOTATIONS  default 10
  ANVIL_ARTIFACT         the uploaded artifact's name, "" when none
  GITHUB_STEP_SUMMARY, GITHUB_WORKSPACE, GITHUB_SERVER_URL,
  GITHUB_REPOSITORY, GITHUB_RUN_ID  as GitHub sets them

Judges' reasons and case ids are text the evaluated system and the judge
control: they are escaped for workflow commands and for Markdown, so they
can neither end an annotation nor add links, images or HTML to the summary.
Python's standard library only.
"""

import json
import os
import re
import sys

SUMMARY_CASES = 50  # failing cases the job summary lists
REASON_CHARS = 300


def cmd_data(s):
    """Escapes a workflow command's message."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def cmd_prop(s):
    """Escapes a workflow command's property value."""
    return cmd_data(s).replace(":", "%3A").replace(",", "%2C")


_MD = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def md(s, limit=None):
    """Text for a Markdown table cell: one line, HTML and Markdown inert."""
    s = " ".join(str(s).split())
    if limit is not None and len(s) > limit:
        s = s[:limit].rstrip() + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD.sub(r"\\\1", s)


def dataset_path(config, args, explicit):
    """The dataset's path: explicit, else --input in args, else the config's
    top-level dataset key (relative to the config's directory). None when
    it cannot be told."""
    if explicit:
        return explicit
    words = args.split()
    for i, w in enumerate(words):
        if w == "--input" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--input="):
            return w[len("--input="):]
    if not config or not os.path.isfile(config):
        return None
    with open(config, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"""^dataset:\s*(?:"([^"]+)"|'([^']+)'|([^\s#]+))""", line)
            if m:
                p = next(g for g in m.groups() if g)
                return p if os.path.isabs(p) else os.path.join(os.path.dirname(config), p)
    return None


def case_lines(path):
    """Maps case id -> 1-based line of the dataset where the case is."""
    lines = {}
    if not path or not os.path.isfile(path):
        return lines
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if path.endswith(".jsonl"):
        record = 0
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            record += 1
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            cid = obj.get("id") if isinstance(obj, dict) else None
            lines.setdefault(cid if isinstance(cid, str) and cid else "case-%d" % record, n)
        return lines
    # A JSON array: the line of each "id": "…" member.
    for m in re.finditer(r'"id"\s*:\s*("(?:[^"\\]|\\.)*")', text):
        try:
            cid = json.loads(m.group(1))
        except ValueError:
            continue
        lines.setdefault(cid, text.count("\n", 0, m.start()) + 1)
    return lines


def rel(path):
    """path as GitHub wants it in an annotation: from the workspace."""
    ws = os.environ.get("GITHUB_WORKSPACE") or os.getcwd()
    p = os.path.relpath(os.path.abspath(path), os.path.abspath(ws))
    return path if p.startswith("..") else p.replace(os.sep, "/")


def num(v):
    return "-" if v is None else "%.3f" % v


def failing(outdir):
    """The failing cases of results.jsonl, in its order: (case id, severity,
    [metric results that failed or erred])."""
    path = os.path.join(outdir, "results.jsonl")
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a torn last line of a stopped run
            bad = [m for m in r.get("metrics", []) if m.get("status") in ("failed", "error")]
            if not bad:
                continue
            gated = any(m.get("status") == "error" or m.get("gated") for m in bad)
            yield r.get("case_id", "?"), ("error" if gated else "warning"), bad


def describe(m):
    st = m.get("status")
    if st == "error":
        err = m.get("error") or {}
        what = "error %s: %s" % (err.get("code", "?"), err.get("message") or m.get("reason", ""))
    else:
        what = "score %s < threshold %s%s: %s" % (
            num(m.get("score")), num(m.get("threshold")), "" if m.get("gated") else " (not gated)", m.get("reason", ""))
    return "%s %s" % (m.get("metric", "?"), what)


def main():
    outdir = os.environ.get("ANVIL_OUTPUT_DIR") or "anvil-results"
    config = os.environ.get("ANVIL_CONFIG", "anvil.yaml")
    limit = int(os.environ.get("ANVIL_MAX_ANNOTATIONS") or "10")
    artifact = os.environ.get("ANVIL_ARTIFACT", "")
    try:
        with open(os.path.join(outdir, "summary.json"), encoding="utf-8") as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        print("::error title=anvil::no summary.json in %s: %s" % (cmd_prop(outdir), cmd_data(str(e))))
        s = None

    ds = dataset_path(config, os.environ.get("ANVIL_ARGS", ""), os.environ.get("ANVIL_DATASET", ""))
    lines = case_lines(ds)
    annotated, listed, total = 0, [], 0
    for cid, severity, bad in failing(outdir):
        total += 1
        if len(listed) < SUMMARY_CASES:
            listed.append((cid, bad))
        if annotated >= limit:
            continue
        annotated += 1
        props = ["title=" + cmd_prop("anvil: case %s" % cid)]
        if ds:
            props.insert(0, "file=" + cmd_prop(rel(ds)))
            if cid in lines:
                props.insert(1, "line=%d" % lines[cid])
        msg = "; ".join(describe(m)[:REASON_CHARS * 2] for m in bad)
        print("::%s %s::%s" % (severity, ",".join(props), cmd_data(msg)))
    if total > annotated:
        print("::notice title=anvil::%d failing case(s) are not annotated (max-annotations %d); the job summary and report.html list them"
              % (total - annotated, limit))

    if s is not None:
        for why in s.get("unverified") or []:
            print("::error title=anvil: not verified::" + cmd_data(why))
        inc = s.get("incomplete")
        if inc:
            print("::error title=anvil: incomplete::" + cmd_data("%s; resume with: %s" % (inc.get("reason", ""), inc.get("resume", ""))))

    out = os.environ.get("GITHUB_STEP_SUMMARY")
    if not out:
        return
    with open(out, "a", encoding="utf-8") as f:
        f.write(summary_markdown(s, listed, total, artifact))


def summary_markdown(s, listed, total, artifact):
    b = []
    if s is None:
        b.append("## Anvil evaluation: no summary\n\nThe run wrote no summary.json; its log says why.\n")
        return "\n".join(b) + "\n"
    verdict = str(s.get("verdict", "?")).upper()
    mark = "✅" if s.get("passed") else "❌"
    b.append("## %s Anvil evaluation: %s\n" % (mark, md(verdict)))
    j = s.get("judge") or {}
    b.append("%d cases · %d judge calls (%d cached) · $%.4f · %d judge, %d plugin, %d metric errors\n" % (
        s.get("cases", 0), j.get("calls", 0), j.get("cache_hits", 0), j.get("usd", 0.0),
        s.get("judge_errors", 0), s.get("plugin_errors", 0), s.get("metric_errors", 0)))
    for why in s.get("unverified") or []:
        b.append("> **Not verified:** %s\n" % md(why))
    inc = s.get("incomplete")
    if inc:
        b.append("> **Incomplete:** %s\n" % md(inc.get("reason", "")))
    b.append("| Metric | Kind | N | Mean | Pass rate | Pass | Fail | Err | Skip | Gate |")
    b.append("|---|---|--:|--:|--:|--:|--:|--:|--:|---|")
    for m in s.get("metrics") or []:
        gate = {"passed": "ok", "failed": "**FAIL**", "unverified": "**UNVERIFIED**", "informational": "info"}.get(m.get("verdict"), md(m.get("verdict", "")))
        rate = m.get("pass_rate")
        b.append("| %s | %s | %d | %s | %s | %d | %d | %d | %d | %s |" % (
            md(m.get("metric", "")), md(m.get("kind", "")), m.get("n", 0), num(m.get("mean")),
            "-" if rate is None else "%.1f%%" % (100 * rate), m.get("passed", 0), m.get("failed", 0),
            m.get("errors", 0), m.get("skipped", 0), gate))
    b.append("")
    if listed:
        b.append("### Failing cases (%d)\n" % total)
        b.append("| Case | Metric | Status | Score | Threshold | Reason |")
        b.append("|---|---|---|--:|--:|---|")
        for cid, bad in listed:
            for m in bad:
                reason = m.get("reason", "")
                if m.get("status") == "error":
                    err = m.get("error") or {}
                    reason = "%s: %s" % (err.get("code", "?"), err.get("message") or reason)
                b.append("| %s | %s | %s%s | %s | %s | %s |" % (
                    md(cid), md(m.get("metric", "")), md(m.get("status", "")), "" if m.get("gated") else " (not gated)",
                    num(m.get("score")), num(m.get("threshold")), md(reason, REASON_CHARS)))
        if total > len(listed):
            b.append("\n%d more failing case(s) in report.html and results.jsonl.\n" % (total - len(listed)))
        b.append("")
    if artifact:
        where = "this run's artifacts"
        server, repo, run = (os.environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
        if server and repo and run:
            where = "[this run's artifacts](%s/%s/actions/runs/%s#artifacts)" % (server, repo, run)
        b.append("junit.xml, report.html and summary.json: artifact `%s` in %s.\n" % (artifact.replace("`", "'"), where))
    return "\n".join(b) + "\n"


if __name__ == "__main__":
    sys.exit(main())
