// noembed: a module that judges and logs but never embeds, for
// sdk_test.go's import check.

import { Descriptor, KindDescriptor, JudgeRequest, MeasureRequest, MeasureResult, judge, log, register } from "@agentanvil/anvil-sdk";

export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";

function describe(): Descriptor {
  const d = new Descriptor("noembed-as", "0.0.1");
  d.kinds = [new KindDescriptor("noop", "metric")];
  return d;
}

function measure(req: MeasureRequest): MeasureResult {
  log("info", "noop");
  const r = judge([JudgeRequest.user("hi")]);
  return MeasureResult.scored(req, r.error === null ? 1 : 0, "noop");
}

register(describe, measure);
