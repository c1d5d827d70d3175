// probe: a test module for the SDK itself (sdk_test.go). Its kinds exercise
// one SDK feature each.

import {
  Descriptor,
  Field,
  JSONValue,
  KindDescriptor,
  MeasureRequest,
  MeasureResult,
  log,
  register,
} from "@agentanvil/anvil-sdk";

export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";

function kind(name: string): KindDescriptor {
  const k = new KindDescriptor(name, "metric");
  k.requiredFields = [Field.ActualOutput];
  return k;
}

function describe(): Descriptor {
  const d = new Descriptor("probe-as", "0.0.1");
  d.kinds = [kind("echo"), kind("assert"), kind("log"), kind("bad_score")];
  return d;
}

function measure(req: MeasureRequest): MeasureResult {
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
