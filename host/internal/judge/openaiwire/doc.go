// Package openaiwire is the judge's OpenAI chat-completions wire format:
// the request body it sends (Request.Encode) and the reply body it reads
// (Decode). It has no other job: what to send, what a reply means and what
// a failure is called are package judge's.
//
// Both directions go through github.com/go-json-experiment/json (the
// implementation behind encoding/json/v2); no JSON grammar is implemented
// here. The rules:
//
//   - A request body is json.Marshal of Request, its fields in the order
//     openai-go writes ChatCompletionNewParams, its strings escaped as
//     encoding/json escapes them (<, >, &, U+2028 and U+2029 as \u
//     escapes): the body openai-go would send for the same request.
//   - A reply body is decoded strictly: exactly one JSON value; member
//     names matched exactly (no case folding); a repeated name, invalid
//     UTF-8 (a lone surrogate escape included), a value of the wrong type
//     or a number out of its type's range is an error. Unknown members are
//     skipped (servers add fields). Bounding the body is the caller's job
//     (the judge reads at most 64 MiB).
//   - What the judge reads is type-checked; what it skips is checked as
//     JSON only. With NeedScore, the top alternatives of a generated token
//     are kept only where package score reads them — a token holding a
//     digit and the token after one (the score's position and the path it
//     continues on) — and the other lists are passed over as raw JSON,
//     never decoded (tokens.go). This is the package's one hand-written
//     path, a walk over jsontext's tokens, held to json.Unmarshal of the
//     plain wire structs (DecodeGeneric) by differential and fuzz tests.
//   - Choices come back in index order, whatever order the server sent
//     them in.
package openaiwire
