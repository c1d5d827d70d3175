// Registration of a plugin's functions and the ABI exports that serve them
// (abi/v1/README.md §2). A plugin module calls register() at top level and
// re-exports the exports it needs:
//
//   register(describe, measure);
//   export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";
//
// Top-level statements run in the module's start function, when the host
// instantiates it, before any export is called.

import {
  AbiError,
  Code,
  Descriptor,
  KindDescriptor,
  MeasureRequest,
  MeasureResult,
  NodeRequest,
  NodeResult,
  PrepareRequest,
  PrepareResult,
} from "./abi";
import { inputString, outputString, setError } from "./host";
import { JSONValue, parseJSON } from "./json";

export type DescribeFn = () => Descriptor;
export type MeasureFn = (req: MeasureRequest) => MeasureResult;
export type PrepareFn = (req: PrepareRequest) => PrepareResult;
export type NodeFn = (req: NodeRequest) => NodeResult;

function noMeasure(req: MeasureRequest): MeasureResult {
  return MeasureResult.fail(req, Code.ABIViolation, "this plugin has no metric kinds");
}
function noPrepare(req: PrepareRequest): PrepareResult {
  const r = new PrepareResult();
  r.error = new AbiError(Code.ABIViolation, "this plugin prepares no kind");
  return r;
}
function noNode(req: NodeRequest): NodeResult {
  const r = new NodeResult();
  r.error = new AbiError(Code.ABIViolation, "this plugin has no node kinds");
  return r;
}

let registered = false;
let describeFn: DescribeFn = (): Descriptor => new Descriptor("", "");
let measureFn: MeasureFn = noMeasure;
let prepareFn: PrepareFn = noPrepare;
let nodeFn: NodeFn = noNode;
let cached: Descriptor | null = null;

/**
 * Registers the plugin: describe returns its descriptor (the same every
 * time, calling no host function), measure scores one case. Call once, at
 * top level. The SDK answers a request for a kind the descriptor does not
 * list (or of the wrong role) with an abi_violation error, and a case that
 * lacks one of the kind's required_fields with missing_field, before
 * measure is called.
 */
export function register(describe: DescribeFn, measure: MeasureFn): void {
  registered = true;
  describeFn = describe;
  measureFn = measure;
}

/** Registers the prepare function (for kinds with prepare: true). */
export function registerPrepare(prepare: PrepareFn): void {
  prepareFn = prepare;
}

/** Registers the node function (for kinds with role node). */
export function registerNode(node: NodeFn): void {
  registered = true;
  nodeFn = node;
}

function descriptor(): Descriptor {
  let d = cached;
  if (d === null) {
    d = describeFn();
    cached = d;
  }
  return d;
}

function findKind(name: string, role: string): KindDescriptor | null {
  const d = descriptor();
  for (let i = 0; i < d.kinds.length; i++) {
    const k = d.kinds[i];
    if (k.name == name && k.role == role) return k;
  }
  return null;
}

/** ABI misuse (§2): set the Extism error and return non-zero; the host discards the instance. */
export function misuse(message: string): i32 {
  setError(message);
  return 1;
}

/** Reads and parses the export's input as a JSON object; null (with the error set) if it is not one. */
function readRequest(what: string): JSONValue | null {
  const parsed = parseJSON(inputString());
  const v = parsed.value;
  if (v === null) {
    setError("decode " + what + ": " + parsed.error);
    return null;
  }
  if (!v.isObject) {
    setError("decode " + what + ": not a JSON object");
    return null;
  }
  return v;
}

function respond(v: JSONValue): i32 {
  outputString(v.toString());
  return 0;
}

export function serveDescribe(): i32 {
  if (!registered) return misuse("no plugin registered: call register() at the top level of the module");
  return respond(descriptor().toJSON());
}

export function serveMeasure(): i32 {
  if (!registered) return misuse("no plugin registered: call register() at the top level of the module");
  const v = readRequest("measure request");
  if (v === null) return 1;
  const req = MeasureRequest.fromJSON(v);
  const k = findKind(req.kind, "metric");
  if (k === null) {
    return respond(
      MeasureResult.fail(req, Code.ABIViolation, "plugin " + descriptor().name + " has no metric kind " + req.kind).toJSON(),
    );
  }
  const missing = req.case.firstMissing(k.requiredFields);
  if (missing.length > 0) {
    return respond(
      MeasureResult.fail(req, Code.MissingField, "case " + req.case.id + " has no " + missing, missing).toJSON(),
    );
  }
  const res = measureFn(req);
  if (res.error === null && !(res.score >= 0 && res.score <= 1)) {
    return respond(
      MeasureResult.fail(req, Code.MetricError, "kind " + req.kind + " produced score " + res.score.toString() + " outside [0,1]").toJSON(),
    );
  }
  return respond(res.toJSON());
}

export function servePrepare(): i32 {
  if (!registered) return misuse("no plugin registered: call register() at the top level of the module");
  const v = readRequest("prepare request");
  if (v === null) return 1;
  const req = PrepareRequest.fromJSON(v);
  const k = findKind(req.kind, "metric");
  if (k === null || !k.prepare) {
    const r = new PrepareResult();
    r.error = new AbiError(Code.ABIViolation, "plugin " + descriptor().name + " has no metric kind " + req.kind + " that prepares");
    return respond(r.toJSON());
  }
  return respond(prepareFn(req).toJSON());
}

export function serveNode(): i32 {
  if (!registered) return misuse("no plugin registered: call register() at the top level of the module");
  const v = readRequest("node request");
  if (v === null) return 1;
  const req = NodeRequest.fromJSON(v);
  const k = findKind(req.kind, "node");
  if (k === null) {
    const r = new NodeResult();
    r.error = new AbiError(Code.ABIViolation, "plugin " + descriptor().name + " has no node kind " + req.kind);
    return respond(r.toJSON());
  }
  const missing = req.case.firstMissing(k.requiredFields);
  if (missing.length > 0) {
    const r = new NodeResult();
    r.error = new AbiError(Code.MissingField, "case " + req.case.id + " has no " + missing, missing);
    return respond(r.toJSON());
  }
  return respond(nodeFn(req).toJSON());
}

/**
 * Checks that config (absent, or a JSON object) has no member outside
 * allowed: the first unknown one is an invalid_config error naming it.
 */
export function checkConfigFields(config: JSONValue | null, allowed: string[]): AbiError | null {
  if (config === null) return null;
  if (!config.isObject) return new AbiError(Code.InvalidConfig, "config must be a JSON object");
  for (let i = 0; i < config.keys.length; i++) {
    if (!allowed.includes(config.keys[i])) {
      return new AbiError(
        Code.InvalidConfig,
        'unknown config field "' + config.keys[i] + '" (known: ' + allowed.join(", ") + ")",
        config.keys[i],
      );
    }
  }
  return null;
}
