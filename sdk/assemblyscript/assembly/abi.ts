// Typed ABI v1 messages (abi/v1/README.md §7, §8) with JSON encode/decode.
// Decoders ignore fields they do not know (§5) and read null as absent (§6);
// encoders write required fields always and optional ones only when set.

import { JSONValue } from "./json";

export const ABI_MAJOR: i32 = 1;
/**
 * The minor this SDK speaks: conversational cases (4) and embed() (5). A
 * host of an older minor still loads a plugin saying it (§5); it just
 * sends no turns, and answers embed() capability_denied.
 */
export const ABI_MINOR: i32 = 5;

/** The most texts one embed request may carry (§7.8). */
export const MAX_EMBED_TEXTS: i32 = 2048;

/** Error codes (§7.7). */
export namespace Code {
  export const MetricError = "metric_error";
  export const InvalidConfig = "invalid_config";
  export const MissingField = "missing_field";
  export const JudgeError = "judge_error";
  export const BudgetExhausted = "budget_exhausted";
  export const CapabilityDenied = "capability_denied";
  export const CacheMiss = "cache_miss";
  export const ABIViolation = "abi_violation";
}

/** Field names (§8), in canonical order. */
export namespace Field {
  export const Input = "input";
  export const ActualOutput = "actual_output";
  export const ExpectedOutput = "expected_output";
  export const Context = "context";
  export const RetrievalContext = "retrieval_context";
  export const ToolsCalled = "tools_called";
  export const ExpectedTools = "expected_tools";
  // The conversational fields (minor 4, §8.1).
  export const Turns = "turns";
  export const Scenario = "scenario";
  export const ExpectedOutcome = "expected_outcome";
  export const ChatbotRole = "chatbot_role";
  // Derived from turns (minor 4): the content of the last user or
  // assistant turn whose content is not empty.
  export const LastUserTurn = "last_user_turn";
  export const LastAssistantTurn = "last_assistant_turn";
}

/** The roles of a conversation's turns (§8.1). */
export namespace Role {
  export const User = "user";
  export const Assistant = "assistant";
  export const System = "system";
  export const Tool = "tool";
}

/** Capability names (§10). */
export const CapabilityJudge = "judge";

function optString(o: JSONValue, key: string, s: string): void {
  if (s.length > 0) o.setString(key, s);
}

function optStrings(o: JSONValue, key: string, list: string[]): void {
  if (list.length > 0) o.set(key, JSONValue.strings(list));
}

// ------------------------------------------------------------------ Error

/** The ABI's typed error (§7.7). plugin, digest, stderr and retryable are host-owned and never written. */
export class AbiError {
  constructor(
    public code: string,
    public message: string,
    public field: string = "",
  ) {}

  toJSON(): JSONValue {
    const o = JSONValue.object().setString("code", this.code).setString("message", this.message);
    optString(o, "field", this.field);
    return o;
  }

  static fromJSON(v: JSONValue): AbiError {
    return new AbiError(v.getString("code", Code.MetricError), v.getString("message"), v.getString("field"));
  }

  toString(): string {
    return this.field.length > 0
      ? this.code + " (" + this.field + "): " + this.message
      : this.code + ": " + this.message;
  }
}

// ------------------------------------------------------------------ Descriptor

export class KindDescriptor {
  description: string = "";
  requiredFields: string[] = [];
  /** A JSON Schema of the config, or null for none. */
  configSchema: JSONValue | null = null;
  verdicts: string[] = [];
  prepare: bool = false;
  /**
   * The capabilities this kind asks for (minor 1), or null: the plugin's.
   * A list, even an empty one, replaces the plugin's for this kind and
   * must be a subset of it (§7.1), so a judge-free kind of a plugin whose
   * other kind judges runs with no judge configured.
   */
  capabilities: string[] | null = null;

  constructor(
    public name: string,
    public role: string = "metric",
  ) {}

  toJSON(): JSONValue {
    const o = JSONValue.object().setString("name", this.name).setString("role", this.role);
    optString(o, "description", this.description);
    optStrings(o, "required_fields", this.requiredFields);
    const cs = this.configSchema;
    if (cs !== null) o.set("config_schema", cs);
    optStrings(o, "verdicts", this.verdicts);
    if (this.prepare) o.setBool("prepare", true);
    const caps = this.capabilities;
    if (caps !== null) o.set("capabilities", JSONValue.strings(caps));
    return o;
  }
}

export class Descriptor {
  abiMajor: i32 = ABI_MAJOR;
  abiMinor: i32 = ABI_MINOR;
  kinds: KindDescriptor[] = [];
  capabilities: string[] = [];

  constructor(
    public name: string,
    public version: string,
  ) {}

  toJSON(): JSONValue {
    const o = JSONValue.object()
      .setString("name", this.name)
      .setString("version", this.version)
      .setNumber("abi_major", this.abiMajor)
      .setNumber("abi_minor", this.abiMinor);
    const ks = JSONValue.array();
    for (let i = 0; i < this.kinds.length; i++) ks.push(this.kinds[i].toJSON());
    o.set("kinds", ks);
    optStrings(o, "capabilities", this.capabilities);
    return o;
  }
}

// ------------------------------------------------------------------ TestCase

export class ToolCall {
  name: string = "";
  arguments: JSONValue | null = null;
  output: JSONValue | null = null;

  static fromJSON(v: JSONValue): ToolCall {
    const t = new ToolCall();
    t.name = v.getString("name");
    t.arguments = v.present("arguments");
    t.output = v.present("output");
    return t;
  }

  toJSON(): JSONValue {
    const o = JSONValue.object().setString("name", this.name);
    const a = this.arguments;
    if (a !== null) o.set("arguments", a);
    const out = this.output;
    if (out !== null) o.set("output", out);
    return o;
  }
}

function toolCalls(v: JSONValue, key: string): ToolCall[] {
  const out = new Array<ToolCall>();
  const a = v.get(key);
  if (a === null || !a.isArray) return out;
  for (let i = 0; i < a.items.length; i++) {
    if (a.items[i].isObject) out.push(ToolCall.fromJSON(a.items[i]));
  }
  return out;
}

function toolCallsJSON(list: ToolCall[]): string {
  const a = JSONValue.array();
  for (let i = 0; i < list.length; i++) a.push(list[i].toJSON());
  return a.toString();
}

/** One message of a conversation (minor 4, §8.1). */
export class Turn {
  role: string = "";
  /** Empty only in a turn of tools only. */
  content: string = "";
  /** What the assistant called to produce this turn. */
  toolsCalled: ToolCall[] = [];
  /** What it retrieved for this turn. */
  retrievalContext: string[] = [];

  constructor(role: string = "", content: string = "") {
    this.role = role;
    this.content = content;
  }

  static fromJSON(v: JSONValue): Turn {
    const t = new Turn(v.getString("role"), v.getString("content"));
    t.toolsCalled = toolCalls(v, "tools_called");
    t.retrievalContext = v.getStrings("retrieval_context");
    return t;
  }

  /** §8.1's rendering of one turn: role and content always, the lists when not empty, in this order. */
  toJSON(): JSONValue {
    const o = JSONValue.object().setString("role", this.role).setString("content", this.content);
    if (this.toolsCalled.length > 0) {
      const a = JSONValue.array();
      for (let i = 0; i < this.toolsCalled.length; i++) a.push(this.toolsCalled[i].toJSON());
      o.set("tools_called", a);
    }
    optStrings(o, "retrieval_context", this.retrievalContext);
    return o;
  }
}

/**
 * Whether the UTF-16 unit c is white space by §8: exactly Go's
 * unicode.IsSpace. Not String#trim's set, which has U+FEFF and lacks U+0085.
 */
function isSpace(c: i32): bool {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0x85) return false;
  return (
    c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000
  );
}

/** Whether every item is empty or white space: such a context is absent (§8). */
function blank(items: string[]): bool {
  for (let i = 0; i < items.length; i++) {
    const s = items[i];
    for (let j = 0; j < s.length; j++) {
      if (!isSpace(s.charCodeAt(j))) return false;
    }
  }
  return true;
}

function turnsJSON(list: Turn[]): string {
  const a = JSONValue.array();
  for (let i = 0; i < list.length; i++) a.push(list[i].toJSON());
  return a.toString();
}

/** One row of a dataset (§8). */
export class TestCase {
  id: string = "";
  input: string = "";
  actualOutput: string = "";
  expectedOutput: string = "";
  context: string[] = [];
  retrievalContext: string[] = [];
  toolsCalled: ToolCall[] = [];
  expectedTools: ToolCall[] = [];
  /** A conversational case's turns, in order (minor 4); empty for a single-turn case. */
  turns: Turn[] = [];
  /** What the user in the conversation is trying to do (minor 4). */
  scenario: string = "";
  /** What the conversation should come to (minor 4). */
  expectedOutcome: string = "";
  /** The role the assistant was told to play (minor 4). */
  chatbotRole: string = "";
  /** The extra object as it was, or null. */
  extra: JSONValue | null = null;

  static fromJSON(v: JSONValue): TestCase {
    const c = new TestCase();
    c.id = v.getString("id");
    c.input = v.getString("input");
    c.actualOutput = v.getString("actual_output");
    c.expectedOutput = v.getString("expected_output");
    c.context = v.getStrings("context");
    c.retrievalContext = v.getStrings("retrieval_context");
    c.toolsCalled = toolCalls(v, "tools_called");
    c.expectedTools = toolCalls(v, "expected_tools");
    const ts = v.get("turns");
    if (ts !== null && ts.isArray) {
      for (let i = 0; i < ts.items.length; i++) {
        if (ts.items[i].isObject) c.turns.push(Turn.fromJSON(ts.items[i]));
      }
    }
    c.scenario = v.getString("scenario");
    c.expectedOutcome = v.getString("expected_outcome");
    c.chatbotRole = v.getString("chatbot_role");
    const ex = v.present("extra");
    if (ex !== null && ex.isObject) c.extra = ex;
    return c;
  }

  /** Whether the case is a conversational one: it has turns (§8.1). */
  get conversational(): bool {
    return this.turns.length > 0;
  }

  /**
   * The content of the last turn of role whose content is not empty, or ""
   * when there is none: what last_user_turn and last_assistant_turn name.
   */
  lastTurn(role: string): string {
    for (let i = this.turns.length - 1; i >= 0; i--) {
      const t = this.turns[i];
      if (t.role == role && t.content.length > 0) return t.content;
    }
    return "";
  }

  /**
   * Whether the field is present (§8's presence rules, the host's): a
   * context or retrieval_context of only empty or white-space items is not.
   */
  has(field: string): bool {
    if (field == Field.Input) return this.input.length > 0;
    if (field == Field.ActualOutput) return this.actualOutput.length > 0;
    if (field == Field.ExpectedOutput) return this.expectedOutput.length > 0;
    if (field == Field.Context) return !blank(this.context);
    if (field == Field.RetrievalContext) return !blank(this.retrievalContext);
    if (field == Field.ToolsCalled) return this.toolsCalled.length > 0;
    if (field == Field.ExpectedTools) return this.expectedTools.length > 0;
    if (field == Field.Turns) return this.turns.length > 0;
    if (field == Field.Scenario) return this.scenario.length > 0;
    if (field == Field.ExpectedOutcome) return this.expectedOutcome.length > 0;
    if (field == Field.ChatbotRole) return this.chatbotRole.length > 0;
    if (field == Field.LastUserTurn) return this.lastTurn(Role.User).length > 0;
    if (field == Field.LastAssistantTurn) return this.lastTurn(Role.Assistant).length > 0;
    const ex = this.extra;
    if (ex === null) return false;
    const v = ex.get(field);
    if (v === null || v.isNull) return false;
    return !(v.isString && v.s.length == 0);
  }

  /** The first of fields that is absent, or "" when all are present. */
  firstMissing(fields: string[]): string {
    for (let i = 0; i < fields.length; i++) {
      if (!this.has(fields[i])) return fields[i];
    }
    return "";
  }

  /** The field rendered as prompt text (§8). */
  render(field: string): string {
    if (field == Field.Input) return this.input;
    if (field == Field.ActualOutput) return this.actualOutput;
    if (field == Field.ExpectedOutput) return this.expectedOutput;
    if (field == Field.Context) return this.context.join("\n");
    if (field == Field.RetrievalContext) return this.retrievalContext.join("\n");
    if (field == Field.ToolsCalled) return toolCallsJSON(this.toolsCalled);
    if (field == Field.ExpectedTools) return toolCallsJSON(this.expectedTools);
    if (field == Field.Turns) return this.turns.length > 0 ? turnsJSON(this.turns) : "";
    if (field == Field.Scenario) return this.scenario;
    if (field == Field.ExpectedOutcome) return this.expectedOutcome;
    if (field == Field.ChatbotRole) return this.chatbotRole;
    if (field == Field.LastUserTurn) return this.lastTurn(Role.User);
    if (field == Field.LastAssistantTurn) return this.lastTurn(Role.Assistant);
    const ex = this.extra;
    if (ex === null) return "";
    const v = ex.get(field);
    if (v === null || v.isNull) return "";
    if (v.isString) return v.s;
    return v.toString();
  }
}

/** A field's heading in a prompt (§8): actual_output → "Actual Output". */
export function fieldTitle(name: string): string {
  const parts = name.split("_");
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p.length > 0) parts[i] = p.charAt(0).toUpperCase() + p.substring(1);
  }
  return parts.join(" ");
}

// ------------------------------------------------------------------ Prepare

export class PrepareRequest {
  kind: string = "";
  metric: string = "";
  config: JSONValue | null = null;
  judgeModel: string = "";

  static fromJSON(v: JSONValue): PrepareRequest {
    const r = new PrepareRequest();
    r.kind = v.getString("kind");
    r.metric = v.getString("metric");
    r.config = v.present("config");
    r.judgeModel = v.getString("judge_model");
    return r;
  }
}

export class PrepareResult {
  state: JSONValue | null = null;
  details: JSONValue | null = null;
  error: AbiError | null = null;

  toJSON(): JSONValue {
    const o = JSONValue.object();
    const s = this.state;
    if (s !== null) o.set("state", s);
    const d = this.details;
    if (d !== null) o.set("details", d);
    const e = this.error;
    if (e !== null) o.set("error", e.toJSON());
    return o;
  }
}

// ------------------------------------------------------------------ Measure

export class MeasureRequest {
  kind: string = "";
  metric: string = "";
  config: JSONValue | null = null;
  prepared: JSONValue | null = null;
  threshold: f64 = 0;
  judgeModel: string = "";
  case: TestCase = new TestCase();

  static fromJSON(v: JSONValue): MeasureRequest {
    const r = new MeasureRequest();
    r.kind = v.getString("kind");
    r.metric = v.getString("metric");
    r.config = v.present("config");
    r.prepared = v.present("prepared");
    r.threshold = v.getNumber("threshold");
    r.judgeModel = v.getString("judge_model");
    const c = v.present("case");
    if (c !== null && c.isObject) r.case = TestCase.fromJSON(c);
    return r;
  }
}

/** A metric's answer (§7.3): exactly one of a score and an error. */
export class MeasureResult {
  /** In [0,1]; ignored when error is set. */
  score: f64 = 0;
  success: bool = false;
  threshold: f64 = 0;
  reason: string = "";
  scoreMode: string = "";
  details: JSONValue | null = null;
  error: AbiError | null = null;

  /** A score, with success = score >= threshold (advisory: the host decides). */
  static scored(req: MeasureRequest, score: f64, reason: string, details: JSONValue | null = null): MeasureResult {
    const r = new MeasureResult();
    r.score = score;
    r.threshold = req.threshold;
    r.success = score >= req.threshold;
    r.reason = reason;
    r.details = details;
    return r;
  }

  /** A metric error (§9): the case is recorded as errored; the instance stays in service. */
  static failed(req: MeasureRequest, err: AbiError): MeasureResult {
    const r = new MeasureResult();
    r.threshold = req.threshold;
    r.error = err;
    return r;
  }

  static fail(req: MeasureRequest, code: string, message: string, field: string = ""): MeasureResult {
    return MeasureResult.failed(req, new AbiError(code, message, field));
  }

  toJSON(): JSONValue {
    const o = JSONValue.object();
    const e = this.error;
    if (e === null) o.setNumber("score", this.score);
    o.setBool("success", e === null && this.success);
    o.setNumber("threshold", this.threshold);
    optString(o, "reason", this.reason);
    optString(o, "score_mode", this.scoreMode);
    const d = this.details;
    if (d !== null) o.set("details", d);
    if (e !== null) o.set("error", e.toJSON());
    return o;
  }
}

// ------------------------------------------------------------------ Node

export class NodeInput {
  nodeId: string = "";
  label: string = "";
  output: string = "";
}

export class NodeRequest {
  kind: string = "";
  nodeId: string = "";
  config: JSONValue | null = null;
  inputs: NodeInput[] = [];
  verdicts: string[] = [];
  judgeModel: string = "";
  case: TestCase = new TestCase();

  static fromJSON(v: JSONValue): NodeRequest {
    const r = new NodeRequest();
    r.kind = v.getString("kind");
    r.nodeId = v.getString("node_id");
    r.config = v.present("config");
    const ins = v.get("inputs");
    if (ins !== null && ins.isArray) {
      for (let i = 0; i < ins.items.length; i++) {
        const it = ins.items[i];
        const n = new NodeInput();
        n.nodeId = it.getString("node_id");
        n.label = it.getString("label");
        n.output = it.getString("output");
        r.inputs.push(n);
      }
    }
    r.verdicts = v.getStrings("verdicts");
    r.judgeModel = v.getString("judge_model");
    const c = v.present("case");
    if (c !== null && c.isObject) r.case = TestCase.fromJSON(c);
    return r;
  }
}

export class NodeResult {
  verdict: string = "";
  output: string = "";
  reason: string = "";
  details: JSONValue | null = null;
  error: AbiError | null = null;

  toJSON(): JSONValue {
    const o = JSONValue.object();
    optString(o, "verdict", this.verdict);
    optString(o, "output", this.output);
    optString(o, "reason", this.reason);
    const d = this.details;
    if (d !== null) o.set("details", d);
    const e = this.error;
    if (e !== null) o.set("error", e.toJSON());
    return o;
  }
}

// ------------------------------------------------------------------ Judge

export class Message {
  constructor(
    public role: string,
    public content: string,
  ) {}
  toJSON(): JSONValue {
    return JSONValue.object().setString("role", this.role).setString("content", this.content);
  }
}

export class ScoreSpec {
  field: string = "";
  samples: i32 = 0;
  /** Negative: absent (the host's default, 1). */
  sampleTemperature: f64 = -1;
  constructor(
    public min: i32,
    public max: i32,
  ) {}
  toJSON(): JSONValue {
    const o = JSONValue.object().setNumber("min", this.min).setNumber("max", this.max);
    optString(o, "field", this.field);
    if (this.samples > 0) o.setNumber("samples", this.samples);
    if (this.sampleTemperature >= 0) o.setNumber("sample_temperature", this.sampleTemperature);
    return o;
  }
}

/** One judge completion (§7.5). Negative temperature means absent (the judge's default); 0 is a value. */
export class JudgeRequest {
  judge: string = "";
  messages: Message[] = [];
  schema: JSONValue | null = null;
  schemaName: string = "";
  topLogprobs: i32 = 0;
  score: ScoreSpec | null = null;
  temperature: f64 = -1;
  maxTokens: i32 = 0;
  purpose: string = "";

  /** A request of one user message. */
  static user(content: string): JudgeRequest {
    const r = new JudgeRequest();
    r.messages.push(new Message("user", content));
    return r;
  }

  toJSON(): JSONValue {
    const o = JSONValue.object();
    optString(o, "judge", this.judge);
    const ms = JSONValue.array();
    for (let i = 0; i < this.messages.length; i++) ms.push(this.messages[i].toJSON());
    o.set("messages", ms);
    const sc = this.schema;
    if (sc !== null) o.set("schema", sc);
    optString(o, "schema_name", this.schemaName);
    if (this.topLogprobs > 0) o.setNumber("top_logprobs", this.topLogprobs);
    const sp = this.score;
    if (sp !== null) o.set("score", sp.toJSON());
    if (this.temperature >= 0) o.setNumber("temperature", this.temperature);
    if (this.maxTokens > 0) o.setNumber("max_tokens", this.maxTokens);
    optString(o, "purpose", this.purpose);
    return o;
  }
}

export class JudgeBatch {
  requests: JudgeRequest[] = [];
  toJSON(): JSONValue {
    const a = JSONValue.array();
    for (let i = 0; i < this.requests.length; i++) a.push(this.requests[i].toJSON());
    return JSONValue.object().set("requests", a);
  }
}

export class ScoreCandidate {
  value: i32 = 0;
  probability: f64 = 0;
}

export class ScoreResult {
  raw: i64 = 0;
  value: f64 = 0;
  mode: string = "";
  cause: string = "";
  candidates: ScoreCandidate[] = [];
  spread: f64 = 0;

  static fromJSON(v: JSONValue): ScoreResult {
    const s = new ScoreResult();
    s.raw = <i64>v.getNumber("raw");
    s.value = v.getNumber("value");
    s.mode = v.getString("mode");
    s.cause = v.getString("cause");
    s.spread = v.getNumber("spread");
    const cs = v.get("candidates");
    if (cs !== null && cs.isArray) {
      for (let i = 0; i < cs.items.length; i++) {
        const c = new ScoreCandidate();
        c.value = <i32>cs.items[i].getNumber("value");
        c.probability = cs.items[i].getNumber("probability");
        s.candidates.push(c);
      }
    }
    return s;
  }
}

export class TopLogprob {
  token: string = "";
  logprob: f64 = 0;
}

export class TokenLogprob {
  token: string = "";
  logprob: f64 = 0;
  top: TopLogprob[] = [];
}

export class Usage {
  model: string = "";
  inputTokens: i64 = 0;
  outputTokens: i64 = 0;
  usd: f64 = 0;
  latencyMs: f64 = 0;
  calls: i64 = 0;
  attempts: i64 = 0;
  usageUnknown: bool = false;
  cacheHit: bool = false;

  static fromJSON(v: JSONValue): Usage {
    const u = new Usage();
    u.model = v.getString("model");
    u.inputTokens = <i64>v.getNumber("input_tokens");
    u.outputTokens = <i64>v.getNumber("output_tokens");
    u.usd = v.getNumber("usd");
    u.latencyMs = v.getNumber("latency_ms");
    u.calls = <i64>v.getNumber("calls");
    u.attempts = <i64>v.getNumber("attempts");
    u.usageUnknown = v.getBool("usage_unknown");
    u.cacheHit = v.getBool("cache_hit");
    return u;
  }
}

export class JudgeResponse {
  content: string = "";
  /** The parsed, schema-valid reply, when the request had a schema. */
  json: JSONValue | null = null;
  tokens: TokenLogprob[] = [];
  score: ScoreResult | null = null;
  usage: Usage = new Usage();
  error: AbiError | null = null;

  static fromJSON(v: JSONValue): JudgeResponse {
    const r = new JudgeResponse();
    r.content = v.getString("content");
    r.json = v.present("json");
    const toks = v.get("tokens");
    if (toks !== null && toks.isArray) {
      for (let i = 0; i < toks.items.length; i++) {
        const t = toks.items[i];
        const tl = new TokenLogprob();
        tl.token = t.getString("token");
        tl.logprob = t.getNumber("logprob");
        const top = t.get("top");
        if (top !== null && top.isArray) {
          for (let j = 0; j < top.items.length; j++) {
            const a = new TopLogprob();
            a.token = top.items[j].getString("token");
            a.logprob = top.items[j].getNumber("logprob");
            tl.top.push(a);
          }
        }
        r.tokens.push(tl);
      }
    }
    const sc = v.present("score");
    if (sc !== null && sc.isObject) r.score = ScoreResult.fromJSON(sc);
    const u = v.present("usage");
    if (u !== null && u.isObject) r.usage = Usage.fromJSON(u);
    const e = v.present("error");
    if (e !== null && e.isObject) r.error = AbiError.fromJSON(e);
    return r;
  }
}

export class JudgeBatchResult {
  responses: JudgeResponse[] = [];
  /** Set when the batch was refused as a whole (§3). */
  error: AbiError | null = null;

  static fromJSON(v: JSONValue): JudgeBatchResult {
    const r = new JudgeBatchResult();
    const rs = v.get("responses");
    if (rs !== null && rs.isArray) {
      for (let i = 0; i < rs.items.length; i++) {
        if (rs.items[i].isObject) r.responses.push(JudgeResponse.fromJSON(rs.items[i]));
      }
    }
    const e = v.present("error");
    if (e !== null && e.isObject) r.error = AbiError.fromJSON(e);
    return r;
  }
}

// ------------------------------------------------------------------ Embed

/** The input of anvil_embed (minor 5, §7.8). */
export class EmbedRequest {
  /** A configured judge's name; "" is the metric's judge. Its embedding_model answers. */
  judge: string = "";
  texts: string[] = [];
  /** Labels the call in accounting ("similarity"). */
  purpose: string = "";

  toJSON(): JSONValue {
    const o = JSONValue.object();
    optString(o, "judge", this.judge);
    o.set("texts", JSONValue.strings(this.texts));
    optString(o, "purpose", this.purpose);
    return o;
  }
}

/**
 * The answer of anvil_embed: one vector per text, in order, all of one
 * length; or error set and no vectors (a request fails whole).
 */
export class EmbedResult {
  vectors: Array<Array<f64>> = [];
  usage: Usage = new Usage();
  error: AbiError | null = null;

  /** A result of error alone. */
  static failed(code: string, message: string): EmbedResult {
    const r = new EmbedResult();
    r.error = new AbiError(code, message);
    return r;
  }

  /**
   * Decodes an EmbedResult answering n texts, checking what §7.8 promises:
   * n vectors of one non-zero length, every value a number. A result that
   * breaks it is an abi_violation, not vectors to compute over.
   */
  static fromJSON(v: JSONValue, n: i32): EmbedResult {
    const e = v.present("error");
    if (e !== null) {
      if (!e.isObject) return EmbedResult.failed(Code.ABIViolation, "embed result: error is not an object");
      const r = new EmbedResult();
      r.error = AbiError.fromJSON(e);
      return r;
    }
    const vs = v.get("vectors");
    if (vs === null || !vs.isArray || vs.items.length != n) {
      const got = vs !== null && vs.isArray ? vs.items.length.toString() : "no";
      return EmbedResult.failed(Code.ABIViolation, "the host answered " + got + " vectors for " + n.toString() + " texts");
    }
    const r = new EmbedResult();
    let dims = -1;
    for (let i = 0; i < vs.items.length; i++) {
      const row = vs.items[i];
      if (!row.isArray || row.items.length == 0) {
        return EmbedResult.failed(Code.ABIViolation, "vectors[" + i.toString() + "] is not a non-empty array of numbers");
      }
      if (dims >= 0 && row.items.length != dims) {
        return EmbedResult.failed(
          Code.ABIViolation,
          "vectors[" + i.toString() + "] has " + row.items.length.toString() + " numbers, vectors[0] " + dims.toString(),
        );
      }
      dims = row.items.length;
      const out = new Array<f64>(dims);
      for (let j = 0; j < dims; j++) {
        const x = row.items[j];
        if (!x.isNumber) {
          return EmbedResult.failed(Code.ABIViolation, "vectors[" + i.toString() + "][" + j.toString() + "] is not a number");
        }
        out[j] = x.n;
      }
      r.vectors.push(out);
    }
    const u = v.present("usage");
    if (u !== null && u.isObject) r.usage = Usage.fromJSON(u);
    return r;
  }
}

// ------------------------------------------------------------------ Log

export class LogRecord {
  attrs: JSONValue | null = null;
  constructor(
    public level: string,
    public message: string,
  ) {}
  toJSON(): JSONValue {
    const o = JSONValue.object().setString("level", this.level).setString("message", this.message);
    const a = this.attrs;
    if (a !== null && a.isObject && a.keys.length > 0) o.set("attrs", a);
    return o;
  }
}
