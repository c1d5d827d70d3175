// Text helpers whose results agree with every other Anvil SDK.

/** Lower-cases ASCII letters only (A–Z → a–z); every other character is kept. */
export function asciiLower(s: string): string {
  let i = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) break;
  }
  if (i == s.length) return s;
  const n = s.length;
  const out = changetype<string>(__new(<usize>n << 1, idof<string>()));
  memory.copy(changetype<usize>(out), changetype<usize>(s), <usize>i << 1);
  for (; i < n; i++) {
    let c = <u16>s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    store<u16>(changetype<usize>(out) + (<usize>i << 1), c);
  }
  return out;
}
