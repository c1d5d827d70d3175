// {{.Name}}: an Anvil metric plugin in AssemblyScript.
//
// Kind {{.Kind}}: the fraction of the configured keywords found in
// actual_output (ASCII case-insensitive unless case_sensitive). Change
// describe() and measure(); the SDK provides the ABI exports, the JSON
// and the calling conventions. See the SDK's README for judge() and log().

import {
  asciiLower,
  checkConfigFields,
  Code,
  Descriptor,
  Field,
  JSONValue,
  KindDescriptor,
  MeasureRequest,
  MeasureResult,
  register,
} from "@agentanvil/anvil-sdk";

export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";

function describe(): Descriptor {
  const d = new Descriptor("{{.Name}}", "0.1.0");
  const k = new KindDescriptor("{{.Kind}}", "metric");
  k.description = "fraction of the configured keywords found in actual_output";
  k.requiredFields = [Field.ActualOutput];
  // The host validates every configured metric against this schema before
  // a run starts, so measure() sees only configs that pass it.
  k.configSchema = JSONValue.parse(`{
    "type": "object",
    "properties": {
      "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                   "description": "keywords to look for in actual_output"},
      "case_sensitive": {"type": "boolean", "description": "compare case-sensitively (default: ASCII case-insensitive)"}
    },
    "required": ["keywords"],
    "additionalProperties": false
  }`);
  d.kinds = [k];
  // This kind asks for no capabilities. A kind that calls judge() adds "judge".
  return d;
}

function measure(req: MeasureRequest): MeasureResult {
  // Config: {"keywords": [string, ...], "case_sensitive": bool}. The schema
  // above has checked it already; checking again costs little and keeps
  // measure() safe when called by other means (anvil-host plugin call).
  const cfg = req.config;
  const unknown = checkConfigFields(cfg, ["keywords", "case_sensitive"]);
  if (unknown !== null) return MeasureResult.failed(req, unknown);
  const kw = cfg !== null ? cfg.present("keywords") : null;
  if (kw === null || !kw.isArray || kw.items.length == 0) {
    return MeasureResult.fail(req, Code.InvalidConfig, "keywords must list at least one keyword", "keywords");
  }
  const keywords = new Array<string>();
  for (let i = 0; i < kw.items.length; i++) {
    if (!kw.items[i].isString || kw.items[i].s.length == 0) {
      return MeasureResult.fail(req, Code.InvalidConfig, "keywords[" + i.toString() + "] must be a non-empty string", "keywords");
    }
    keywords.push(kw.items[i].s);
  }
  const caseSensitive = cfg !== null && cfg.getBool("case_sensitive");

  const text = caseSensitive ? req.case.actualOutput : asciiLower(req.case.actualOutput);
  const found = new Array<string>();
  const missing = new Array<string>();
  for (let i = 0; i < keywords.length; i++) {
    const k = caseSensitive ? keywords[i] : asciiLower(keywords[i]);
    if (text.includes(k)) found.push(keywords[i]);
    else missing.push(keywords[i]);
  }
  const score = <f64>found.length / <f64>keywords.length;
  let reason = "found " + found.length.toString() + " of " + keywords.length.toString() + " keywords";
  if (missing.length > 0) reason += "; missing: " + missing.join(", ");
  const details = JSONValue.object().set("found", JSONValue.strings(found)).set("missing", JSONValue.strings(missing));
  return MeasureResult.scored(req, score, reason, details);
}

register(describe, measure);
