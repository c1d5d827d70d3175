// probe: a test module for the SDK itself (sdk_test.go). Its kinds exercise
// one SDK feature each.

import {
  CapabilityJudge,
  Descriptor,
  EmbedResult,
  Field,
  JSONValue,
  KindDescriptor,
  MeasureRequest,
  MeasureResult,
  Role,
  embed,
  log,
  register,
} from "@agentanvil/anvil-sdk";

export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";

function kind(name: string, fields: string[] = [Field.ActualOutput]): KindDescriptor {
  const k = new KindDescriptor(name, "metric");
  k.requiredFields = fields;
  k.capabilities = [];
  return k;
}

function describe(): Descriptor {
  const d = new Descriptor("probe-as", "0.0.1");
  const cosine = kind("cosine", [Field.ActualOutput, Field.ExpectedOutput]);
  cosine.capabilities = [CapabilityJudge];
  d.kinds = [
    kind("echo"),
    kind("assert"),
    kind("log"),
    kind("bad_score"),
    cosine,
    kind("turns", [Field.Turns, Field.LastUserTurn]),
    kind("decode_embed"),
    kind("presence"),
  ];
  d.capabilities = [CapabilityJudge];
  return d;
}

// cosine: the cosine of the embeddings of actual_output and expected_output.
function cosine(req: MeasureRequest): MeasureResult {
  const res = embed([req.case.actualOutput, req.case.expectedOutput], "", "similarity");
  const err = res.error;
  if (err !== null) return MeasureResult.failed(req, err);
  const a = res.vectors[0];
  const b = res.vectors[1];
  let dot = 0.0;
  let na = 0.0;
  let nb = 0.0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  if (na == 0 || nb == 0) return MeasureResult.fail(req, "metric_error", "a zero vector has no direction");
  const c = dot / (Math.sqrt(na) * Math.sqrt(nb));
  const d = JSONValue.object().setNumber("cosine", c).setNumber("dimensions", a.length);
  return MeasureResult.scored(req, Math.max(0, Math.min(1, c)), "cosine " + c.toString(), d);
}

// turns: reads a conversation's turns and fields.
function turns(req: MeasureRequest): MeasureResult {
  const c = req.case;
  let assistant = 0;
  const roles = new Array<string>();
  const tools = new Array<string>();
  const retrieved = new Array<string>();
  for (let i = 0; i < c.turns.length; i++) {
    const t = c.turns[i];
    roles.push(t.role);
    if (t.role == Role.Assistant) assistant++;
    for (let j = 0; j < t.toolsCalled.length; j++) tools.push(t.toolsCalled[j].name);
    for (let j = 0; j < t.retrievalContext.length; j++) retrieved.push(t.retrievalContext[j]);
  }
  const d = JSONValue.object()
    .set("roles", JSONValue.strings(roles))
    .setString("last_user_turn", c.render(Field.LastUserTurn))
    .setString("last_assistant_turn", c.lastTurn(Role.Assistant))
    .set("tools", JSONValue.strings(tools))
    .set("retrieval_context", JSONValue.strings(retrieved))
    .setString("scenario", c.scenario)
    .setString("chatbot_role", c.render(Field.ChatbotRole))
    .setString("rendered", c.render(Field.Turns))
    .setBool("conversational", c.conversational);
  const n = c.turns.length;
  return MeasureResult.scored(
    req,
    <f64>assistant / <f64>n,
    assistant.toString() + " of " + n.toString() + " turns are the assistant's",
    d,
  );
}

// decode_embed: EmbedResult.fromJSON on config.result (an EmbedResult's
// text) answering config.n texts, for the answers a real host never sends.
function decodeEmbed(req: MeasureRequest): MeasureResult {
  const cfg = req.config;
  if (cfg === null) return MeasureResult.fail(req, "invalid_config", "no config");
  const r = EmbedResult.fromJSON(JSONValue.parse(cfg.getString("result")), <i32>cfg.getNumber("n"));
  const d = JSONValue.object();
  const err = r.error;
  if (err !== null) d.setString("error", err.toString());
  const vs = JSONValue.array();
  for (let i = 0; i < r.vectors.length; i++) {
    const row = JSONValue.array();
    for (let j = 0; j < r.vectors[i].length; j++) row.push(JSONValue.number(r.vectors[i][j]));
    vs.push(row);
  }
  d.set("vectors", vs);
  d.setNumber("calls", <f64>r.usage.calls);
  return MeasureResult.scored(req, 1, "decoded", d);
}

// presence: whether the case has context and retrieval_context (§8).
function presence(req: MeasureRequest): MeasureResult {
  const c = req.case;
  const d = JSONValue.object()
    .setBool("context", c.has(Field.Context))
    .setBool("retrieval_context", c.has(Field.RetrievalContext));
  return MeasureResult.scored(req, 1, "presence", d);
}

function measure(req: MeasureRequest): MeasureResult {
  if (req.kind == "cosine") return cosine(req);
  if (req.kind == "presence") return presence(req);
  if (req.kind == "decode_embed") return decodeEmbed(req);
  if (req.kind == "turns") return turns(req);
  if (req.kind == "echo") {
    // actual_output and config back, through the SDK's JSON reader and writer.
    const cfg = req.config;
    const d = JSONValue.object()
      .setString("text", req.case.actualOutput)
      .set("config", cfg !== null ? cfg : JSONValue.null())
      .setNumber("utf16_length", req.case.actualOutput.length);
    return MeasureResult.scored(req, 1, "echo: " + req.case.actualOutput, d);
  }
  if (req.kind == "assert") {
    assert(req.case.actualOutput == "fine", "probe assertion failed on " + req.case.actualOutput);
    return MeasureResult.scored(req, 1, "fine");
  }
  if (req.kind == "log") {
    log("warn", "probe log: " + req.case.actualOutput, JSONValue.object().setString("case", req.case.id));
    return MeasureResult.scored(req, 1, "logged");
  }
  // bad_score: the SDK turns a score outside [0,1] into a metric error.
  return MeasureResult.scored(req, 1.5, "too high");
}

register(describe, measure);
