// Package judgeconfig is the configuration of one judge — endpoint, model,
// limits, prices, capabilities — with its defaults and validation, apart
// from the client that uses it.
//
// It exists so that parsing anvil.yaml (host/internal/config) does not link
// the judge client and its HTTP/OpenAI stack: judge.Config is an alias of
// Config, so the two are one type.
//
// Invariants: this package imports only the standard library and
// host/internal/duration (TestConfigSurfaceIsPure in host/internal/config
// enforces it); everything here is pure — no I/O, no environment — so the
// API key appears only as the name of the variable that holds it.
package judgeconfig

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentanvil/anvil/host/internal/duration"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxConcurrency = 8
	DefaultMaxRetries     = 4
	DefaultMaxTopLogprobs = 20
)

// Config is one configured judge: a provider's endpoint and a model, with
// its limits, prices and capabilities. The API key itself never appears
// here, only the name of the environment variable that holds it; a header
// value likewise names its secret parts as ${VAR} (see Headers).
type Config struct {
	// Name is how metrics and requests refer to this judge.
	Name string `yaml:"name" json:"name"`
	// Provider is the API the judge speaks (Providers): openai (the
	// default, any OpenAI-compatible server), azure, anthropic, gemini or
	// bedrock.
	Provider Provider `yaml:"provider,omitempty" json:"provider,omitempty"`
	// BaseURL of the API, e.g. "https://api.openai.com/v1",
	// "http://localhost:11434/v1", an Azure resource endpoint
	// "https://acme.openai.azure.com", or "https://api.anthropic.com"
	// (anthropic's default).
	BaseURL string `yaml:"base_url" json:"base_url"`
	// Model sent in every request. For azure it defaults to Deployment and
	// names the model family (context window, number tokens, prices).
	Model string `yaml:"model" json:"model"`
	// APIKeyEnv names the environment variable holding the API key. Empty
	// means no key (local servers). Sent as the provider sends keys:
	// Authorization: Bearer (openai), api-key (azure), x-api-key
	// (anthropic).
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// EntraTokenEnv (azure only) names the environment variable holding a
	// Microsoft Entra ID access token, sent as a bearer token instead of
	// the api-key header.
	EntraTokenEnv string `yaml:"entra_token_env,omitempty" json:"entra_token_env,omitempty"`
	// Deployment and APIVersion (azure only) address the model:
	// {base_url}/openai/deployments/{deployment}/chat/completions?api-version={api_version}.
	Deployment string `yaml:"deployment,omitempty" json:"deployment,omitempty"`
	APIVersion string `yaml:"api_version,omitempty" json:"api_version,omitempty"`
	// Region (bedrock only) is the AWS region the model is called in:
	// the endpoint bedrock-runtime.{region}.amazonaws.com (unless base_url
	// overrides it) and the region requests are signed for.
	Region string `yaml:"region,omitempty" json:"region,omitempty"`
	// EmbeddingModel is the model the judge's embeddings call asks for
	// (similarity metrics): an OpenAI embedding model, for azure its
	// deployment, a Gemini embedding model, a Bedrock Titan or Cohere
	// embed model ID. Empty: the judge makes no embeddings.
	EmbeddingModel string `yaml:"embedding_model,omitempty" json:"embedding_model,omitempty"`
	// Headers are sent with every request (an organisation, a gateway's
	// key). A value may take parts from the environment as ${VAR}
	// ("Bearer ${GATEWAY_TOKEN}"); those parts are secrets like the key:
	// never logged, scrubbed from errors. Header values are never logged
	// at all.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Timeout bounds one HTTP attempt, not the whole request with retries;
	// a batch's exchanges (upload, status, results), the time in which
	// nothing moves.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// MaxConcurrency caps the judge's in-flight HTTP requests.
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	// RequestsPerMinute and TokensPerMinute pace calls; 0 means unlimited.
	// Tokens are estimated before the call (input ≈ characters/4, plus
	// max_tokens when set).
	// A request whose estimate exceeds the whole tokens_per_minute
	// allowance is refused (request_too_large): it could never fit.
	RequestsPerMinute int `yaml:"requests_per_minute,omitempty" json:"requests_per_minute,omitempty"`
	TokensPerMinute   int `yaml:"tokens_per_minute,omitempty" json:"tokens_per_minute,omitempty"`
	// MaxInputTokens is the largest input (messages and schema, estimated
	// as above) the judge is sent; a larger request is refused with
	// request_too_large before it goes out. 0 takes the model family's
	// context window (DefaultMaxInputTokens), or no check for a model
	// Anvil does not know.
	MaxInputTokens int `yaml:"max_input_tokens,omitempty" json:"max_input_tokens,omitempty"`
	// Price converts tokens to USD. When it sets any rate it is the
	// judge's price; otherwise the judge takes its provider and model's
	// row of the built-in price table (host/internal/pricing), and a
	// model the table does not know has no price (no USD, and the summary
	// says why).
	Price Price `yaml:"price,omitempty" json:"price,omitempty"`
	// SupportsLogprobs says the server returns token log-probabilities.
	SupportsLogprobs bool `yaml:"supports_logprobs,omitempty" json:"supports_logprobs,omitempty"`
	// MaxTopLogprobs caps top_logprobs (OpenAI allows 20).
	MaxTopLogprobs int `yaml:"max_top_logprobs,omitempty" json:"max_top_logprobs,omitempty"`
	// SupportsJSONSchema says the server honours response_format json_schema.
	SupportsJSONSchema bool `yaml:"supports_json_schema,omitempty" json:"supports_json_schema,omitempty"`
	// JSONSchemaStrict sends strict: true with json_schema. Only for schemas
	// that meet OpenAI's strict subset (every property required,
	// additionalProperties false); otherwise the server rejects the request.
	JSONSchemaStrict bool `yaml:"json_schema_strict,omitempty" json:"json_schema_strict,omitempty"`
	// SupportsJSONMode says the server honours response_format json_object.
	SupportsJSONMode bool `yaml:"supports_json_mode,omitempty" json:"supports_json_mode,omitempty"`
	// SupportsN says the server honours n > 1 (several choices in one call).
	// Without it, score sampling makes separate calls.
	SupportsN bool `yaml:"supports_n,omitempty" json:"supports_n,omitempty"`
	// Temperature, when set, is sent unless a request sets its own; when nil
	// the server's default applies.
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// MaxRetries is how many times a failed attempt is retried (429, 5xx,
	// timeouts, connection errors); attempts = MaxRetries + 1. A negative
	// value disables retries.
	MaxRetries int `yaml:"max_retries,omitempty" json:"max_retries,omitempty"`
	// MaxTokens caps replies when a request does not; 0 sends no cap.
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// NumberTokens says how the model's tokenizer writes integers (whole,
	// digits, or auto from the model family; see NumberTokensFor), which
	// decides how logprob-weighted scores read an alternative "1".
	NumberTokens NumberTokens `yaml:"number_tokens,omitempty" json:"number_tokens,omitempty"`
	// OfflineRecording names a recorded judge session (`anvil-host cache
	// export`), relative to the config file, that answers for this judge
	// when it has no API key: the run replays it instead of skipping the
	// judge's metrics, and says so in its output. With a key, the judge is
	// called and the recording is not read.
	OfflineRecording string `yaml:"offline_recording,omitempty" json:"offline_recording,omitempty"`
	// Batch sends the judge's scoring calls through the provider's batch
	// API at its batch price (docs/batch.md), as `run --batch` does for
	// every judge that has one.
	Batch bool `yaml:"batch,omitempty" json:"batch,omitempty"`
}

// Price is USD per million tokens.
type Price struct {
	InputPerMillion  float64 `yaml:"input_per_million,omitempty" json:"input_per_million,omitempty"`
	OutputPerMillion float64 `yaml:"output_per_million,omitempty" json:"output_per_million,omitempty"`
	// CachedInputPerMillion prices input tokens the provider served from
	// its prompt cache (OpenAI's cached_tokens, Anthropic's
	// cache_read_input_tokens); 0 prices them as input.
	CachedInputPerMillion float64 `yaml:"cached_input_per_million,omitempty" json:"cached_input_per_million,omitempty"`
	// CacheWritePerMillion prices input tokens written to the provider's
	// prompt cache (Anthropic's cache_creation_input_tokens); 0 prices
	// them as input.
	CacheWritePerMillion float64 `yaml:"cache_write_per_million,omitempty" json:"cache_write_per_million,omitempty"`
	// EmbeddingPerMillion prices the embeddings call's input tokens.
	EmbeddingPerMillion float64 `yaml:"embedding_per_million,omitempty" json:"embedding_per_million,omitempty"`
}

// Set says the price sets a rate: a configured price replaces the price
// table's row.
func (p Price) Set() bool {
	// The embeddings' price is not the table's to give: setting it alone
	// leaves the completions' rates to the table.
	p.EmbeddingPerMillion = 0
	return p != Price{}
}

// WithDefaults is the price with the cached and cache-write rates the
// input rate where they are not set.
func (p Price) WithDefaults() Price {
	if p.CachedInputPerMillion == 0 {
		p.CachedInputPerMillion = p.InputPerMillion
	}
	if p.CacheWritePerMillion == 0 {
		p.CacheWritePerMillion = p.InputPerMillion
	}
	return p
}

// WithDefaults returns the config with zero values replaced by defaults.
func (c Config) WithDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = Duration(DefaultTimeout)
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.MaxTopLogprobs <= 0 {
		c.MaxTopLogprobs = DefaultMaxTopLogprobs
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.Provider == "" {
		c.Provider = ProviderOpenAI
	}
	if c.Model == "" && c.Provider == ProviderAzure {
		c.Model = c.Deployment
	}
	if c.BaseURL == "" {
		c.BaseURL = c.Provider.DefaultBaseURL()
	}
	if c.BaseURL == "" && c.Provider == ProviderBedrock && validRegion(c.Region) {
		c.BaseURL = BedrockEndpoint(c.Region)
	}
	if c.Name == "" {
		c.Name = c.Model
	}
	if c.MaxInputTokens == 0 {
		c.MaxInputTokens = DefaultMaxInputTokens(c.Model)
	}
	if c.NumberTokens == "" {
		c.NumberTokens = NumbersAuto
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return c
}

// Validate reports every problem of the config, each naming its field.
// Call it after WithDefaults.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("judge %q: %s: %s", c.Name, field, fmt.Sprintf(format, args...)))
	}
	if c.Model == "" && (c.Provider != ProviderAzure || c.Deployment != "") {
		bad("model", "required")
	}
	c.validateProvider(bad)
	if c.BaseURL == "" {
		if c.Provider != ProviderBedrock { // its base_url comes from region, named missing above
			bad("base_url", "required (e.g. %s)", c.Provider.ExampleBaseURL())
		}
	} else if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("base_url", "%q is not an http(s) URL", c.BaseURL)
	}
	if c.APIKeyEnv != "" && strings.ContainsAny(c.APIKeyEnv, " =$") {
		bad("api_key_env", "must name an environment variable, not hold a key or an expression")
	}
	if c.EntraTokenEnv != "" && strings.ContainsAny(c.EntraTokenEnv, " =$") {
		bad("entra_token_env", "must name an environment variable, not hold a token or an expression")
	}
	c.validateHeaders(bad)
	if c.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	if c.MaxConcurrency < 0 {
		bad("max_concurrency", "must not be negative")
	}
	if c.RequestsPerMinute < 0 {
		bad("requests_per_minute", "must not be negative")
	}
	if c.TokensPerMinute < 0 {
		bad("tokens_per_minute", "must not be negative")
	}
	if c.MaxInputTokens < 0 {
		bad("max_input_tokens", "must not be negative")
	}
	if c.Price.InputPerMillion < 0 {
		bad("price.input_per_million", "must not be negative")
	}
	if c.Price.OutputPerMillion < 0 {
		bad("price.output_per_million", "must not be negative")
	}
	if c.Price.CachedInputPerMillion < 0 {
		bad("price.cached_input_per_million", "must not be negative")
	}
	if c.Price.CacheWritePerMillion < 0 {
		bad("price.cache_write_per_million", "must not be negative")
	}
	if c.Price.EmbeddingPerMillion < 0 {
		bad("price.embedding_per_million", "must not be negative")
	}
	if c.EmbeddingModel != "" && !c.Provider.HasEmbeddings() {
		bad("embedding_model", "provider %s has no embeddings API", c.Provider)
	}
	if c.MaxTopLogprobs < 0 || c.MaxTopLogprobs > 20 {
		bad("max_top_logprobs", "%d is outside 0..20", c.MaxTopLogprobs)
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2) {
		bad("temperature", "%g is outside 0..2", *c.Temperature)
	}
	if c.MaxTokens < 0 {
		bad("max_tokens", "must not be negative")
	}
	switch c.NumberTokens {
	case "", NumbersAuto, NumbersWhole, NumbersDigits:
	default:
		bad("number_tokens", "%q: want whole, digits or auto", c.NumberTokens)
	}
	return errors.Join(errs...)
}

// Duration is the config duration type: "30s" or a number of seconds.
type Duration = duration.Duration
