// The guest's side of the Extism calling conventions (abi/v1/README.md §4)
// and the Anvil host functions (§3).
//
// Every payload is UTF-8 JSON measured in BYTES: this file never passes a
// string's .length (UTF-16 code units) as a size. (@extism/as-pdk 1.0.0's
// Host.outputString does, and truncates non-ASCII output.)

import {
  alloc,
  error_set,
  free,
  input_length,
  input_load_u64,
  input_load_u8,
  length,
  load_u64,
  load_u8,
  output_set,
  store_u64,
  store_u8,
} from "@extism/as-pdk/lib/env";

import {
  AbiError,
  Code,
  EmbedRequest,
  EmbedResult,
  JudgeBatch,
  JudgeBatchResult,
  JudgeRequest,
  LogRecord,
  MAX_EMBED_TEXTS,
} from "./abi";
import { JSONValue, parseJSON } from "./json";

// The host functions, in Extism's user namespace (§3).
@external("extism:host/user", "anvil_judge")
declare function host_judge(batch: u64): u64;
@external("extism:host/user", "anvil_log")
declare function host_log(record: u64): void;
// Minor 5. asc imports it only into a module that calls embed(), so a
// plugin that does not still loads on an older host (which refuses a
// module importing it).
@external("extism:host/user", "anvil_embed")
declare function host_embed(request: u64): u64;

/** The export's input, as bytes. */
export function inputBytes(): Uint8Array {
  const n = <i32>input_length();
  const out = new Uint8Array(n);
  const base = out.dataStart;
  let i = 0;
  for (; i + 8 <= n; i += 8) store<u64>(base + <usize>i, input_load_u64(<u64>i));
  for (; i < n; i++) store<u8>(base + <usize>i, input_load_u8(<u64>i));
  return out;
}

/** The export's input decoded from UTF-8. */
export function inputString(): string {
  const b = inputBytes();
  return String.UTF8.decodeUnsafe(b.dataStart, <usize>b.length);
}

/** Copies bytes into a new Extism memory block and returns its offset. */
export function allocBytes(data: Uint8Array): u64 {
  const n = data.length;
  const off = alloc(<u64>n);
  const base = data.dataStart;
  let i = 0;
  for (; i + 8 <= n; i += 8) store_u64(off + <u64>i, load<u64>(base + <usize>i));
  for (; i < n; i++) store_u8(off + <u64>i, load<u8>(base + <usize>i));
  return off;
}

/** Copies a string into a new Extism block as UTF-8 and returns its offset and byte length. */
export function allocString(s: string): u64 {
  return allocBytes(Uint8Array.wrap(String.UTF8.encode(s)));
}

/** Reads the Extism block at off (its whole length) as bytes. */
export function readBlock(off: u64): Uint8Array {
  const n = <i32>length(off);
  const out = new Uint8Array(n);
  const base = out.dataStart;
  let i = 0;
  for (; i + 8 <= n; i += 8) store<u64>(base + <usize>i, load_u64(off + <u64>i));
  for (; i < n; i++) store<u8>(base + <usize>i, load_u8(off + <u64>i));
  return out;
}

/** Sets the export's output to s, encoded as UTF-8, sized in bytes. */
export function outputString(s: string): void {
  const bytes = Uint8Array.wrap(String.UTF8.encode(s));
  const off = allocBytes(bytes);
  output_set(off, <u64>bytes.length);
}

/** Sets the Extism error (shown by the host on a non-zero return or a trap). */
export function setError(message: string): void {
  error_set(allocString(message));
}

/**
 * Sends one batch through anvil_judge (§3, §7.5). A refused batch comes back
 * with `error` set (capability_denied, budget_exhausted, …) and no responses;
 * each response may carry its own error. The guest needs the `judge`
 * capability in its descriptor, and the operator must grant it.
 */
export function judge(requests: JudgeRequest[]): JudgeBatchResult {
  const batch = new JudgeBatch();
  batch.requests = requests;
  const inOff = allocString(batch.toJSON().toString());
  const outOff = host_judge(inOff);
  free(inOff);
  if (outOff == 0) {
    const r = new JudgeBatchResult();
    r.error = new AbiError(Code.ABIViolation, "host returned no judge result");
    return r;
  }
  const bytes = readBlock(outOff);
  free(outOff);
  const parsed = parseJSON(String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length));
  const v = parsed.value;
  if (v === null || !v.isObject) {
    const r = new JudgeBatchResult();
    r.error = new AbiError(Code.ABIViolation, "decode judge result: " + parsed.error);
    return r;
  }
  return JudgeBatchResult.fromJSON(v);
}

/**
 * Embeds texts through anvil_embed (minor 5, §3, §7.8) with the embedding
 * model of a configured judge (judge "": the metric's judge): one vector
 * per text, in order, all of one length, in `vectors`. A refused or
 * failed request comes back with `error` set — the host's code kept
 * (capability_denied, budget_exhausted, invalid_config when the judge has
 * no embedding_model, judge_error, …) — and no vectors: propagate it with
 * MeasureResult.failed(req, err). Needs the `judge` capability; counts as
 * one judge call.
 */
export function embed(texts: string[], judge: string = "", purpose: string = ""): EmbedResult {
  if (texts.length == 0 || texts.length > MAX_EMBED_TEXTS) {
    return EmbedResult.failed(
      Code.ABIViolation,
      "embed: " + texts.length.toString() + " texts; want 1 to " + MAX_EMBED_TEXTS.toString(),
    );
  }
  const req = new EmbedRequest();
  req.judge = judge;
  req.texts = texts;
  req.purpose = purpose;
  const inOff = allocString(req.toJSON().toString());
  const outOff = host_embed(inOff);
  free(inOff);
  if (outOff == 0) return EmbedResult.failed(Code.ABIViolation, "host returned no embed result");
  const bytes = readBlock(outOff);
  free(outOff);
  const parsed = parseJSON(String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length));
  const v = parsed.value;
  if (v === null || !v.isObject) return EmbedResult.failed(Code.ABIViolation, "decode embed result: " + parsed.error);
  return EmbedResult.fromJSON(v, texts.length);
}

/** Sends one record through anvil_log (§3, §7.6): level is debug, info, warn or error. */
export function log(level: string, message: string, attrs: JSONValue | null = null): void {
  const rec = new LogRecord(level, message);
  rec.attrs = attrs;
  const off = allocString(rec.toJSON().toString());
  host_log(off);
  free(off);
}

/**
 * The abort handler. Compile with `--use abort=~lib/@agentanvil/anvil-sdk/assembly/host/anvilAbort`
 * (the SDK's asconfig does) so an AssemblyScript abort — a failed assertion,
 * an out-of-range index, a null dereference — needs no `env.abort` import:
 * it sets the Extism error to the message and location, then traps, so the
 * host records the trap with the reason.
 */
export function anvilAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  let text = "abort";
  if (message !== null) text += ": " + message;
  if (fileName !== null) text += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  setError(text);
  unreachable();
}
