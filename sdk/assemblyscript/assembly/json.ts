// A small, strict JSON value type for ABI messages: parse (RFC 8259) into a
// tree that keeps object keys in order, and write compact JSON that the
// host's strict decoder accepts (every key once, finite numbers only,
// integers written without a fraction).

export enum JSONKind {
  Null = 0,
  Bool = 1,
  Number = 2,
  String = 3,
  Array = 4,
  Object = 5,
}

/** A JSON value. Objects keep their keys in insertion order. */
export class JSONValue {
  kind: JSONKind = JSONKind.Null;
  b: bool = false;
  n: f64 = 0;
  s: string = "";
  items: JSONValue[] = [];
  keys: string[] = [];
  vals: JSONValue[] = [];

  static null(): JSONValue {
    return new JSONValue();
  }
  static bool(b: bool): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Bool;
    v.b = b;
    return v;
  }
  static number(n: f64): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Number;
    v.n = n;
    return v;
  }
  static string(s: string): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.String;
    v.s = s;
    return v;
  }
  static array(items: JSONValue[] = []): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Array;
    v.items = items;
    return v;
  }
  static object(): JSONValue {
    const v = new JSONValue();
    v.kind = JSONKind.Object;
    return v;
  }
  /**
   * Parses JSON text the plugin itself wrote (a config_schema, a constant):
   * invalid text aborts. For input, use parseJSON and handle its error.
   */
  static parse(text: string): JSONValue {
    const r = parseJSON(text);
    const v = r.value;
    if (v === null) {
      abort("JSONValue.parse: " + r.error, "@agentanvil/anvil-sdk/assembly/json.ts", 0, 0);
      return JSONValue.null();
    }
    return v;
  }

  /** An array of strings. */
  static strings(list: string[]): JSONValue {
    const items = new Array<JSONValue>(list.length);
    for (let i = 0; i < list.length; i++) items[i] = JSONValue.string(list[i]);
    return JSONValue.array(items);
  }

  get isNull(): bool {
    return this.kind == JSONKind.Null;
  }
  get isBool(): bool {
    return this.kind == JSONKind.Bool;
  }
  get isNumber(): bool {
    return this.kind == JSONKind.Number;
  }
  get isString(): bool {
    return this.kind == JSONKind.String;
  }
  get isArray(): bool {
    return this.kind == JSONKind.Array;
  }
  get isObject(): bool {
    return this.kind == JSONKind.Object;
  }

  /** The member named key of an object, or null (also for non-objects). */
  get(key: string): JSONValue | null {
    if (this.kind != JSONKind.Object) return null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.vals[i];
    }
    return null;
  }

  /** The member named key unless it is absent or JSON null (§6: null reads as absent). */
  present(key: string): JSONValue | null {
    const v = this.get(key);
    if (v === null || v.isNull) return null;
    return v;
  }

  has(key: string): bool {
    return this.get(key) !== null;
  }

  /** Sets (or replaces, keeping its place) the member key of an object; returns this. */
  set(key: string, v: JSONValue): JSONValue {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) {
        this.vals[i] = v;
        return this;
      }
    }
    this.keys.push(key);
    this.vals.push(v);
    return this;
  }
  setString(key: string, s: string): JSONValue {
    return this.set(key, JSONValue.string(s));
  }
  setNumber(key: string, n: f64): JSONValue {
    return this.set(key, JSONValue.number(n));
  }
  setBool(key: string, b: bool): JSONValue {
    return this.set(key, JSONValue.bool(b));
  }
  push(v: JSONValue): JSONValue {
    this.items.push(v);
    return this;
  }

  /** Member key as a string, or def when absent, null or not a string. */
  getString(key: string, def: string = ""): string {
    const v = this.get(key);
    return v !== null && v.isString ? v.s : def;
  }
  getNumber(key: string, def: f64 = 0): f64 {
    const v = this.get(key);
    return v !== null && v.isNumber ? v.n : def;
  }
  getBool(key: string, def: bool = false): bool {
    const v = this.get(key);
    return v !== null && v.isBool ? v.b : def;
  }
  /** Member key as a list of strings (non-string items are skipped). */
  getStrings(key: string): string[] {
    const out = new Array<string>();
    const v = this.get(key);
    if (v === null || !v.isArray) return out;
    for (let i = 0; i < v.items.length; i++) {
      if (v.items[i].isString) out.push(v.items[i].s);
    }
    return out;
  }

  /** Compact JSON text. A non-finite number cannot be written: it is written as null. */
  toString(): string {
    const parts = new Array<string>();
    writeValue(parts, this);
    return parts.join("");
  }
}

// ---------------------------------------------------------------- writing

function writeValue(out: string[], v: JSONValue): void {
  switch (v.kind) {
    case JSONKind.Null:
      out.push("null");
      break;
    case JSONKind.Bool:
      out.push(v.b ? "true" : "false");
      break;
    case JSONKind.Number:
      out.push(formatNumber(v.n));
      break;
    case JSONKind.String:
      out.push(quote(v.s));
      break;
    case JSONKind.Array: {
      out.push("[");
      for (let i = 0; i < v.items.length; i++) {
        if (i > 0) out.push(",");
        writeValue(out, v.items[i]);
      }
      out.push("]");
      break;
    }
    case JSONKind.Object: {
      out.push("{");
      for (let i = 0; i < v.keys.length; i++) {
        if (i > 0) out.push(",");
        out.push(quote(v.keys[i]));
        out.push(":");
        writeValue(out, v.vals[i]);
      }
      out.push("}");
      break;
    }
  }
}

/** JSON text of a number: integers (|n| < 2^53) without a fraction, others shortest round-trip; NaN/Inf → null. */
export function formatNumber(n: f64): string {
  if (!isFinite(n)) return "null";
  if (n == Math.floor(n) && Math.abs(n) < 9007199254740992.0) {
    if (n == 0) return "0";
    return (<i64>n).toString();
  }
  return n.toString();
}

const HEX = "0123456789abcdef";

/**
 * A JSON string literal. Lone surrogates are escaped (\udXXX), so the UTF-8
 * is always valid; U+2028 and U+2029 are escaped as Go's encoder escapes
 * them, so a field rendered as JSON (tools_called, turns; §8) is the
 * host's text byte for byte.
 */
export function quote(s: string): string {
  let needs = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c == 0x22 || c == 0x5c || (c >= 0xd800 && c <= 0xdfff) || c == 0x2028 || c == 0x2029) {
      needs = true;
      break;
    }
  }
  if (!needs) return '"' + s + '"';
  const parts = new Array<string>();
  parts.push('"');
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | null = null;
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c == 0x08) esc = "\\b";
    else if (c == 0x0c) esc = "\\f";
    else if (c < 0x20 || c == 0x2028 || c == 0x2029) esc = hex4(c);
    else if (c >= 0xd800 && c <= 0xdbff) {
      // A high surrogate is fine when a low one follows.
      if (i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          i++;
          continue;
        }
      }
      esc = hex4(c);
    } else if (c >= 0xdc00 && c <= 0xdfff) esc = hex4(c);
    if (esc !== null) {
      if (i > start) parts.push(s.substring(start, i));
      parts.push(esc);
      start = i + 1;
    }
  }
  if (start < s.length) parts.push(s.substring(start));
  parts.push('"');
  return parts.join("");
}

function hex4(c: i32): string {
  return (
    "\\u" +
    HEX.charAt((c >> 12) & 15) +
    HEX.charAt((c >> 8) & 15) +
    HEX.charAt((c >> 4) & 15) +
    HEX.charAt(c & 15)
  );
}

// ---------------------------------------------------------------- parsing

/** What parse returns: a value, or an error saying where the text went wrong. */
export class JSONParseResult {
  constructor(
    public value: JSONValue | null,
    public error: string,
  ) {}
  get ok(): bool {
    return this.value !== null;
  }
}

/** Parses one JSON value (and nothing after it but white space). Nesting is limited to 512 levels. */
export function parseJSON(text: string): JSONParseResult {
  const p = new Parser(text);
  const v = p.value(0);
  if (v !== null) {
    p.ws();
    if (p.pos != text.length) {
      return new JSONParseResult(null, "unexpected text after the JSON value at offset " + p.pos.toString());
    }
    return new JSONParseResult(v, "");
  }
  return new JSONParseResult(null, p.err);
}

const MAX_DEPTH = 512;

class Parser {
  pos: i32 = 0;
  err: string = "";
  constructor(public s: string) {}

  fail(msg: string): JSONValue | null {
    if (this.err.length == 0) this.err = msg + " at offset " + this.pos.toString();
    return null;
  }

  ws(): void {
    const s = this.s;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      if (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) this.pos++;
      else break;
    }
  }

  value(depth: i32): JSONValue | null {
    if (depth > MAX_DEPTH) return this.fail("JSON nested too deeply");
    this.ws();
    if (this.pos >= this.s.length) return this.fail("unexpected end of JSON");
    const c = this.s.charCodeAt(this.pos);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) {
      const str = this.string();
      if (str === null) return null;
      return JSONValue.string(str);
    }
    if (c == 0x74) return this.literal("true", JSONValue.bool(true));
    if (c == 0x66) return this.literal("false", JSONValue.bool(false));
    if (c == 0x6e) return this.literal("null", JSONValue.null());
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    return this.fail("unexpected character '" + String.fromCharCode(c) + "'");
  }

  literal(word: string, v: JSONValue): JSONValue | null {
    if (this.s.substr(this.pos, word.length) != word) return this.fail("invalid literal");
    this.pos += word.length;
    return v;
  }

  digits(): i32 {
    const start = this.pos;
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c < 0x30 || c > 0x39) break;
      this.pos++;
    }
    return this.pos - start;
  }

  number(): JSONValue | null {
    const start = this.pos;
    const s = this.s;
    if (s.charCodeAt(this.pos) == 0x2d) this.pos++;
    if (this.pos < s.length && s.charCodeAt(this.pos) == 0x30) {
      this.pos++;
    } else if (this.digits() == 0) {
      return this.fail("invalid number");
    }
    if (this.pos < s.length && s.charCodeAt(this.pos) == 0x2e) {
      this.pos++;
      if (this.digits() == 0) return this.fail("invalid number");
    }
    if (this.pos < s.length) {
      const e = s.charCodeAt(this.pos);
      if (e == 0x65 || e == 0x45) {
        this.pos++;
        if (this.pos < s.length) {
          const sign = s.charCodeAt(this.pos);
          if (sign == 0x2b || sign == 0x2d) this.pos++;
        }
        if (this.digits() == 0) return this.fail("invalid number");
      }
    }
    const n = parseFloat(s.substring(start, this.pos));
    if (!isFinite(n)) return this.fail("number out of range");
    return JSONValue.number(n);
  }

  hex(): i32 {
    if (this.pos + 4 > this.s.length) return -1;
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.s.charCodeAt(this.pos + i);
      let d = -1;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      if (d < 0) return -1;
      v = (v << 4) | d;
    }
    this.pos += 4;
    return v;
  }

  /** A string literal at pos (which is a quote); null on error. */
  string(): string | null {
    const s = this.s;
    this.pos++; // opening quote
    let start = this.pos;
    let parts: string[] | null = null;
    while (true) {
      if (this.pos >= s.length) {
        this.fail("unterminated string");
        return null;
      }
      const c = s.charCodeAt(this.pos);
      if (c == 0x22) {
        const tail = s.substring(start, this.pos);
        this.pos++;
        if (parts === null) return tail;
        parts.push(tail);
        return parts.join("");
      }
      if (c < 0x20) {
        this.fail("control character in string");
        return null;
      }
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      if (parts === null) parts = new Array<string>();
      parts.push(s.substring(start, this.pos));
      this.pos++;
      if (this.pos >= s.length) {
        this.fail("unterminated string");
        return null;
      }
      const e = s.charCodeAt(this.pos);
      this.pos++;
      if (e == 0x22) parts.push('"');
      else if (e == 0x5c) parts.push("\\");
      else if (e == 0x2f) parts.push("/");
      else if (e == 0x62) parts.push("\b");
      else if (e == 0x66) parts.push("\f");
      else if (e == 0x6e) parts.push("\n");
      else if (e == 0x72) parts.push("\r");
      else if (e == 0x74) parts.push("\t");
      else if (e == 0x75) {
        const u = this.hex();
        if (u < 0) {
          this.fail("invalid \\u escape");
          return null;
        }
        parts.push(String.fromCharCode(u));
      } else {
        this.pos--;
        this.fail("invalid escape");
        return null;
      }
      start = this.pos;
    }
  }

  array(depth: i32): JSONValue | null {
    this.pos++; // [
    const v = JSONValue.array();
    this.ws();
    if (this.pos < this.s.length && this.s.charCodeAt(this.pos) == 0x5d) {
      this.pos++;
      return v;
    }
    while (true) {
      const item = this.value(depth + 1);
      if (item === null) return null;
      v.items.push(item);
      this.ws();
      if (this.pos >= this.s.length) return this.fail("unterminated array");
      const c = this.s.charCodeAt(this.pos);
      this.pos++;
      if (c == 0x2c) continue;
      if (c == 0x5d) return v;
      this.pos--;
      return this.fail("expected ',' or ']'");
    }
  }

  object(depth: i32): JSONValue | null {
    this.pos++; // {
    const v = JSONValue.object();
    this.ws();
    if (this.pos < this.s.length && this.s.charCodeAt(this.pos) == 0x7d) {
      this.pos++;
      return v;
    }
    while (true) {
      this.ws();
      if (this.pos >= this.s.length || this.s.charCodeAt(this.pos) != 0x22) return this.fail("expected a string key");
      const key = this.string();
      if (key === null) return null;
      this.ws();
      if (this.pos >= this.s.length || this.s.charCodeAt(this.pos) != 0x3a) return this.fail("expected ':'");
      this.pos++;
      const item = this.value(depth + 1);
      if (item === null) return null;
      // A repeated key: the last one wins, as in most readers.
      v.set(key, item);
      this.ws();
      if (this.pos >= this.s.length) return this.fail("unterminated object");
      const c = this.s.charCodeAt(this.pos);
      this.pos++;
      if (c == 0x2c) continue;
      if (c == 0x7d) return v;
      this.pos--;
      return this.fail("expected ',' or '}'");
    }
  }
}
