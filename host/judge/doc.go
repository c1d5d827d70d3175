// Package judge is the only code in Anvil that talks to an LLM. A Judge is
// one configured OpenAI-compatible endpoint and model (OpenAI, Azure, vLLM,
// llama.cpp, Ollama, LM Studio) reached through github.com/openai/openai-go,
// with the middleware every call goes through:
//
//	cache → singleflight → budget/accounting → rate limit → concurrency limit → retry → client
//
// The rules:
//
//   - Do never panics and never returns a Go error. A fault is a typed
//     *abi.Error in the response: judge_error (named with the judge, the
//     model, the HTTP status and the attempts made), cache_miss in replay
//     mode, budget_exhausted past the spend limit, abi_violation or
//     invalid_config for a malformed request. Retryable marks faults worth
//     trying again in a later run.
//   - The API key is read once, from the environment variable the config
//     names, and never appears in configuration, logs or errors; text from
//     the server is scrubbed of it.
//   - Retries: 429, 5xx, timeouts and connection errors, with full-jitter
//     exponential backoff, honouring Retry-After (seconds or HTTP date) and
//     retry-after-ms; never 400/401/403/404/422. openai-go's own retries are
//     off, so Usage.Attempts is the truth. The timeout is per attempt.
//   - Structured output: json_schema response format when the server
//     supports it, else json_object with the schema in the prompt, else the
//     schema in the prompt and a tolerant parse (first '{' to last '}',
//     trailing commas dropped). The reply is validated against the schema;
//     a reply that does not parse or validate gets exactly one repair
//     attempt showing the model its reply and the error, then a judge_error
//     saying what failed.
//   - Logprobs are requested only from judges configured to support them,
//     capped at max_top_logprobs. A score is located and weighted by package
//     score, never here; judges without logprobs fall back to the raw
//     integer, or to the mean of several samples when the request asks.
//   - The cache is content-addressed: sha256 of the model, messages,
//     schema, schema mode and every sampling parameter. A hit makes no HTTP
//     call and reports CacheHit, USD 0 and latency 0. Errors are never
//     cached. Replay mode answers from the cache alone, so a run can be
//     replayed offline.
//   - Identical requests in flight together make one upstream call; the
//     caller that made it carries its cost, the others report USD 0.
//   - Every response carries Usage (model, tokens, USD at the configured
//     prices, latency, attempts, cache hit); Totals sums them for the judge.
package judge
