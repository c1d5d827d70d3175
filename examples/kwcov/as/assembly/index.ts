// kwcov-as: the shared keyword_coverage example metric (examples/kwcov) in
// AssemblyScript, on @agentanvil/anvil-sdk.

import {
  AbiError,
  asciiLower,
  checkConfigFields,
  Code,
  Descriptor,
  Field,
  JSONValue,
  JudgeRequest,
  KindDescriptor,
  MeasureRequest,
  MeasureResult,
  judge,
  register,
} from "@agentanvil/anvil-sdk";

export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";

const KIND = "keyword_coverage";

function describe(): Descriptor {
  const d = new Descriptor("kwcov-as", "0.1.0");
  const k = new KindDescriptor(KIND, "metric");
  k.description = "fraction of the configured keywords found in actual_output, optionally checked by the judge";
  k.requiredFields = [Field.ActualOutput];
  d.kinds = [k];
  d.capabilities = ["judge"];
  return d;
}

class Config {
  keywords: string[] = [];
  caseSensitive: bool = false;
  judgeCheck: bool = false;
  error: AbiError | null = null;
}

function invalid(field: string, message: string): Config {
  const c = new Config();
  c.error = new AbiError(Code.InvalidConfig, message, field);
  return c;
}

function parseConfig(v: JSONValue | null): Config {
  const unknown = checkConfigFields(v, ["keywords", "case_sensitive", "judge_check"]);
  if (unknown !== null) {
    const c = new Config();
    c.error = unknown;
    return c;
  }
  const c = new Config();
  if (v === null) return invalid("keywords", "keywords is required: list at least one keyword");
  const kw = v.present("keywords");
  if (kw === null) return invalid("keywords", "keywords is required: list at least one keyword");
  if (!kw.isArray) return invalid("keywords", "keywords must be an array of strings");
  if (kw.items.length == 0) return invalid("keywords", "keywords must list at least one keyword");
  for (let i = 0; i < kw.items.length; i++) {
    const it = kw.items[i];
    if (!it.isString) return invalid("keywords", "keywords[" + i.toString() + "] is not a string");
    if (it.s.length == 0) return invalid("keywords", "keywords[" + i.toString() + "] is empty");
    c.keywords.push(it.s);
  }
  const cs = v.present("case_sensitive");
  if (cs !== null) {
    if (!cs.isBool) return invalid("case_sensitive", "case_sensitive must be a boolean");
    c.caseSensitive = cs.b;
  }
  const jc = v.present("judge_check");
  if (jc !== null) {
    if (!jc.isBool) return invalid("judge_check", "judge_check must be a boolean");
    c.judgeCheck = jc.b;
  }
  return c;
}

function verdictSchema(): JSONValue {
  return JSONValue.object()
    .setString("type", "object")
    .set("properties", JSONValue.object().set("verdict", JSONValue.object().setString("type", "boolean")))
    .set("required", JSONValue.strings(["verdict"]))
    .setBool("additionalProperties", false);
}

function measure(req: MeasureRequest): MeasureResult {
  const cfg = parseConfig(req.config);
  const cerr = cfg.error;
  if (cerr !== null) return MeasureResult.failed(req, cerr);

  const text = req.case.actualOutput;
  const hay = cfg.caseSensitive ? text : asciiLower(text);
  const found = new Array<string>();
  const missing = new Array<string>();
  for (let i = 0; i < cfg.keywords.length; i++) {
    const k = cfg.keywords[i];
    const needle = cfg.caseSensitive ? k : asciiLower(k);
    if (hay.includes(needle)) found.push(k);
    else missing.push(k);
  }
  const n = cfg.keywords.length;
  let score = <f64>found.length / <f64>n;
  let reason = "found " + found.length.toString() + " of " + n.toString() + " keywords";
  if (missing.length > 0) reason += "; missing: " + missing.join(", ");
  const details = JSONValue.object().set("found", JSONValue.strings(found)).set("missing", JSONValue.strings(missing));

  if (cfg.judgeCheck) {
    const jr = JudgeRequest.user(
      "Does the following answer use these keywords in a meaningful way? Keywords: " +
        cfg.keywords.join(", ") +
        "\n\nAnswer:\n" +
        text +
        '\n\nReturn only a JSON object {"verdict": true|false}.',
    );
    jr.schema = verdictSchema();
    jr.schemaName = "keyword_check";
    jr.purpose = "keyword_check";
    jr.temperature = 0;
    const res = judge([jr]);
    const berr = res.error;
    if (berr !== null) return MeasureResult.failed(req, berr);
    if (res.responses.length != 1) {
      return MeasureResult.fail(req, Code.JudgeError, "judge answered " + res.responses.length.toString() + " responses to 1 request");
    }
    const r = res.responses[0];
    const rerr = r.error;
    if (rerr !== null) return MeasureResult.failed(req, rerr);
    const j = r.json;
    const verdict = j !== null ? j.present("verdict") : null;
    if (verdict === null || !verdict.isBool) {
      return MeasureResult.fail(req, Code.MetricError, "judge reply has no boolean verdict: " + r.content);
    }
    details.setBool("judge", verdict.b);
    if (!verdict.b) {
      score = score / 2;
      reason += "; judge: not meaningful";
    }
  }
  return MeasureResult.scored(req, score, reason, details);
}

register(describe, measure);
