// Package judge is the only code in Anvil that talks to an LLM. A Judge is
// one configured endpoint and model of a provider — any OpenAI-compatible
// server (OpenAI, vLLM, llama.cpp, Ollama, LM Studio) and Azure OpenAI
// through github.com/openai/openai-go/v3, Anthropic through
// github.com/anthropics/anthropic-sdk-go, Gemini through
// google.golang.org/genai, Amazon Bedrock (Converse) through
// aws-sdk-go-v2's bedrockruntime — with the middleware every call goes
// through, one for every provider:
//
//	cache → singleflight → budget/accounting → breaker → size check → rate limit → concurrency limit → retry → provider
//
// A provider (provider.go) only translates: the judge's plan of a call
// into its API's request body, and one attempt's reply into a completion
// (content, logprobs if any, usage, finish reason) or a classified
// failure keeping the server's words. Every rule below holds for each.
//
// The rules:
//
//   - Do never panics and never returns a Go error. A fault is a typed
//     *abi.Error in the response: judge_error (named with the judge, the
//     model, the HTTP status and the attempts made, and the server's own
//     words, bounded and stripped of control characters, whatever shape
//     its error body has — an HTTP 200 carrying {"error": …} included),
//     judge_truncated for a reply the server cut at its token limit,
//     request_too_large for a request refused before sending,
//     judge_unavailable once the breaker is open, cache_miss in replay
//     mode, budget_exhausted past the spend limit, abi_violation or
//     invalid_config for a malformed request. Retryable marks faults worth
//     trying again in a later run.
//   - The API key is read once, from the environment variable the config
//     names, and never appears in configuration, logs or errors; text from
//     the server is scrubbed of it. So are the parts of configured headers
//     taken from the environment (${VAR}); header values are never logged.
//   - Retries: 429, 5xx, timeouts and connection errors, with full-jitter
//     exponential backoff, honouring Retry-After (seconds or HTTP date) and
//     retry-after-ms; a refused connection once only; never
//     400/401/403/404/422, an unknown host or a TLS failure. openai-go's own
//     retries are off, so Usage.Attempts is the truth. The timeout is per
//     attempt.
//   - Breaker: three calls in a row that failed in a way no retry can fix
//     (connection refused, unknown host, TLS, 401, 403, 404) open it for
//     the judge's life: every later request fails at once with
//     judge_unavailable and no HTTP, one WARN says so, OnUnavailable tells
//     the engine, which stops the run. Cache hits are still served.
//   - Size: a request whose estimated input exceeds max_input_tokens
//     (defaults by model family), or whose input and reply cap exceed the
//     whole tokens_per_minute allowance, is refused with request_too_large
//     before it is sent, naming the estimate, the limit and the largest
//     message.
//   - Structured output: json_schema response format when the server
//     supports it, else json_object with the schema in the prompt, else the
//     schema in the prompt and a tolerant parse (first '{' to last '}',
//     trailing commas dropped). A server that rejects the mode with a 400
//     or 422 naming it gets the next weaker mode, for that request and the
//     rest of the run, with one WARN per step; the cache key keeps the
//     configured mode. The reply's content is parsed once, strictly (a
//     repeated name, invalid UTF-8 or a lone surrogate escape is a parse
//     problem like any other): the canonical object the response carries,
//     the value the schema validates and the score field read from it all
//     come from that parse (replyobject.go). The reply is validated
//     against the schema; a reply
//     that does not parse or validate gets exactly one repair attempt
//     showing the model its reply and the error, then a judge_error saying
//     what failed. A reply with finish_reason "length" is judge_truncated,
//     never repaired and never used, even when it parses.
//   - Anthropic's structured output is a tool forced by tool_choice, its
//     input the reply; it has no logprobs and no n, and max_tokens is
//     always sent (anthropic.go). Bedrock's is the same through Converse's
//     toolConfig, signed with SigV4 by credentials from the AWS chain
//     (bedrock.go). Gemini's is responseJsonSchema, with logprobs and
//     candidateCount where the model has them (gemini.go). An SDK that
//     decodes replies itself (genai, the AWS SDK) has the raw reply
//     captured under it (capture.go), so it is decoded strictly here as
//     every other; a Google error's RetryInfo is honoured as Retry-After,
//     and the Gemini API's 400 API_KEY_INVALID is an authentication
//     failure.
//   - Embed (embed.go) embeds texts with the judge's embedding_model
//     (openai, azure, gemini, bedrock) through the same layers: a cache
//     entry per text keyed by provider, endpoint, model and text; the
//     spend limit, breaker, rate and concurrency limits and retries;
//     usage priced at price.embedding_per_million.
//   - Logprobs are requested only from judges configured to support them,
//     capped at max_top_logprobs. A score is located and weighted by package
//     score, never here; judges without logprobs fall back to the raw
//     integer, or to the mean of several samples when the request asks.
//   - The wire format is package openaiwire's, on
//     github.com/go-json-experiment/json; the judge writes no JSON by
//     hand. A reply body (at most 64 MiB) is decoded strictly (a repeated
//     name, invalid UTF-8, a mistyped value is an unparseable reply), with
//     a handful of allocations however many alternatives it carries;
//     unless the caller reads the tokens, only what package score reads of
//     them is kept, and the other alternative lists are checked as JSON
//     and passed over (reply.go). The request body is byte for byte what
//     openai-go makes of the same request with its own types (but for
//     invalid UTF-8, sent as U+FFFD either way), and openai-go sends it
//     (wire.go).
//   - The cache is content-addressed: sha256 of the provider and endpoint
//     (for every provider but openai, whose keys predate them), the model, messages,
//     schema, schema mode and every sampling parameter, as JSON whose
//     bytes are the ones encoding/json made before the move to
//     go-json-experiment, so a store keeps its hits (plan.go). A hit makes no HTTP
//     call and reports CacheHit, USD 0, calls and attempts 0, latency 0. Errors are never
//     cached. Replay mode answers from the cache alone, so a run can be
//     replayed offline.
//   - Identical requests in flight together make one upstream call; the
//     caller that made it carries its cost, the others report USD 0.
//   - Every response carries Usage (model, tokens — of which read from and
//     written to the provider's prompt cache —, USD, latency, upstream
//     calls, HTTP attempts, cache hit); Totals sums them for the judge, and
//     Totals.Calls is the sum of Usage.Calls. USD is at the judge's price
//     (price.go): its config's price:, else its model's row of the
//     built-in table (package pricing), each kind of input token at its
//     rate; a judge with neither reports USD 0 and marks its calls
//     Unpriced, never a cost it does not know.
//   - Batch mode (WithBatch, batch.go): a call made in a batching context
//     (WithBatching) is sent as a line of the provider's batch (OpenAI's
//     and Azure's Batch API files, batchwire.go; Anthropic's message
//     batches, anthropicbatch.go) in place of the HTTP attempt, below the cache, singleflight, budget and breaker;
//     prepare calls, made outside one, stay live. Its batch is recorded in
//     the store before the caller can be answered, so a resumed run polls
//     it rather than submitting it again; it is priced at the provider's
//     batch discount (package pricing).
//   - A reply without a usage block is counted at the judge's estimate and
//     marked usage_unknown: unknown is not zero, and the spend limit holds.
package judge
