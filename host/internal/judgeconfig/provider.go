package judgeconfig

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Provider is the API a judge speaks.
type Provider string

const (
	// ProviderOpenAI is any server speaking OpenAI's chat completions
	// (OpenAI, vLLM, llama.cpp, Ollama, LM Studio, LiteLLM, a gateway).
	ProviderOpenAI Provider = "openai"
	// ProviderAzure is Azure OpenAI: a deployment on a resource endpoint,
	// an api-version, the api-key header or an Entra ID token.
	ProviderAzure Provider = "azure"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic Provider = "anthropic"
	// ProviderGemini is Google's Gemini API (generateContent), with an API
	// key.
	ProviderGemini Provider = "gemini"
	// ProviderBedrock is Amazon Bedrock's Converse API in a region, with
	// credentials from the standard AWS chain (no api_key_env).
	ProviderBedrock Provider = "bedrock"
)

// Providers are the providers a judge may name, in the order docs list them.
var Providers = []Provider{ProviderOpenAI, ProviderAzure, ProviderAnthropic, ProviderGemini, ProviderBedrock}

// plannedProviders are named by the configuration's documentation as
// coming; naming one says so rather than "unknown".
var plannedProviders = []Provider{}

// DefaultBaseURL is where the provider's own service is, or "" when there
// is no one place (Azure: each resource has its endpoint). The openai
// default is applied by the engine (it reads OPENAI_BASE_URL first).
func (p Provider) DefaultBaseURL() string {
	switch p {
	case ProviderAnthropic:
		return "https://api.anthropic.com"
	case ProviderGemini:
		return "https://generativelanguage.googleapis.com"
	}
	return ""
}

// BedrockEndpoint is Bedrock's runtime endpoint in region, the base URL a
// bedrock judge without one is called at (and named by in its identity).
func BedrockEndpoint(region string) string {
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

// ExampleBaseURL is a base URL the provider takes, for messages.
func (p Provider) ExampleBaseURL() string {
	switch p {
	case ProviderAzure:
		return "https://<resource>.openai.azure.com"
	case ProviderAnthropic:
		return "https://api.anthropic.com"
	case ProviderGemini:
		return "https://generativelanguage.googleapis.com"
	case ProviderBedrock:
		return "https://bedrock-runtime.us-east-1.amazonaws.com"
	}
	return "https://api.openai.com/v1"
}

// DefaultAPIKeyEnv is the environment variable the provider's own tools
// read the key from, used when api_key_env is not set.
func (p Provider) DefaultAPIKeyEnv() string {
	switch p {
	case ProviderAzure:
		return "AZURE_OPENAI_API_KEY"
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	case ProviderGemini:
		return "GEMINI_API_KEY"
	case ProviderBedrock:
		return "" // the AWS credential chain
	}
	return "OPENAI_API_KEY"
}

// UsesAPIKey says the provider's credential is a key read from an
// environment variable (api_key_env); bedrock's comes from the AWS
// credential chain (environment, shared config and profiles, SSO, web
// identity, container and instance roles), resolved at the first call.
func (p Provider) UsesAPIKey() bool { return p != ProviderBedrock }

// CredentialEnv names the environment variable holding the judge's
// credential: entra_token_env when set (azure), else api_key_env.
func (c Config) CredentialEnv() string {
	if c.EntraTokenEnv != "" {
		return c.EntraTokenEnv
	}
	return c.APIKeyEnv
}

// HasBatch says the provider has a batch API the judge speaks (OpenAI's
// and Azure OpenAI's files and batches, Anthropic's message batches).
func (p Provider) HasBatch() bool {
	return p == ProviderOpenAI || p == ProviderAzure || p == ProviderAnthropic || p == ""
}

// HasLogprobs says the provider's API can return token log-probabilities
// (Gemini's with the models that support responseLogprobs).
func (p Provider) HasLogprobs() bool { return p != ProviderAnthropic && p != ProviderBedrock }

// HasEmbeddings says the provider's API embeds text (Anthropic's does
// not).
func (p Provider) HasEmbeddings() bool { return p != ProviderAnthropic }

// HasN says the provider's API can return several choices in one call
// (Gemini's candidateCount).
func (p Provider) HasN() bool { return p != ProviderAnthropic && p != ProviderBedrock }

// validateProvider checks the provider and the settings it needs or
// refuses.
func (c Config) validateProvider(bad func(field, format string, args ...any)) {
	switch c.Provider {
	case ProviderOpenAI, "":
		for field, v := range map[string]string{"deployment": c.Deployment, "api_version": c.APIVersion, "entra_token_env": c.EntraTokenEnv} {
			if v != "" {
				bad(field, "only for provider azure (this judge's provider is %s)", c.Provider)
			}
		}
	case ProviderAzure:
		if c.Deployment == "" {
			bad("deployment", "required for provider azure: the name of the model deployment on the resource")
		}
		if c.APIVersion == "" {
			bad("api_version", "required for provider azure (e.g. \"2024-10-21\")")
		}
		if c.EntraTokenEnv != "" && c.APIKeyEnv != "" {
			bad("entra_token_env", "give api_key_env or entra_token_env, not both")
		}
		if c.EntraTokenEnv != "" && c.BaseURL != "" && !strings.HasPrefix(strings.ToLower(c.BaseURL), "https://") {
			bad("entra_token_env", "an Entra ID token is only sent over https; base_url is %q", c.BaseURL)
		}
		if c.BaseURL != "" && strings.Contains(c.BaseURL, "/openai") {
			bad("base_url", "%q: give the resource endpoint (https://<resource>.openai.azure.com); the /openai/deployments/… path is added from deployment", c.BaseURL)
		}
	case ProviderAnthropic, ProviderGemini, ProviderBedrock:
		for field, v := range map[string]string{"deployment": c.Deployment, "api_version": c.APIVersion, "entra_token_env": c.EntraTokenEnv} {
			if v != "" {
				bad(field, "only for provider azure (this judge's provider is %s)", c.Provider)
			}
		}
		if c.Batch && !c.Provider.HasBatch() {
			bad("batch", "provider %s's batch API is not implemented yet (openai, azure and anthropic are); remove batch: true for this judge", c.Provider)
		}
		if c.Provider == ProviderAnthropic && c.Temperature != nil && *c.Temperature > 1 {
			bad("temperature", "%g is outside 0..1, Anthropic's range", *c.Temperature)
		}
		if c.Provider == ProviderBedrock {
			if c.Region == "" {
				bad("region", "required for provider bedrock: the AWS region the model is served in (e.g. \"us-east-1\")")
			} else if !validRegion(c.Region) {
				bad("region", "%q is not an AWS region name (e.g. \"us-east-1\")", c.Region)
			}
			if c.APIKeyEnv != "" {
				bad("api_key_env", "not for provider bedrock: its credentials come from the AWS chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, a role)")
			}
		}
	default:
		if slices.Contains(plannedProviders, c.Provider) {
			bad("provider", "%q is not supported by this build yet; supported: %s", c.Provider, providerList())
		} else {
			bad("provider", "%q is not a provider; want one of %s", c.Provider, providerList())
		}
		return
	}
	if c.Region != "" && c.Provider != ProviderBedrock {
		bad("region", "only for provider bedrock (this judge's provider is %s)", c.Provider)
	}
	if !c.Provider.HasLogprobs() && c.SupportsLogprobs {
		bad("supports_logprobs", "provider %s returns no log-probabilities; scores are sampled instead (samples > 1) or read as written", c.Provider)
	}
	if !c.Provider.HasN() && c.SupportsN {
		bad("supports_n", "provider %s returns one reply per call", c.Provider)
	}
}

// validRegion is an AWS region's shape: lower-case letters, digits and
// dashes ("us-east-1", "us-gov-west-1"). It becomes part of a host name.
func validRegion(s string) bool {
	if s == "" || len(s) > 32 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		default:
			return false
		}
	}
	return true
}

func providerList() string {
	names := make([]string, len(Providers))
	for i, p := range Providers {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// reservedHeaders are set by the client from the request and the
// provider's authentication; a configured header may not replace them.
var reservedHeaders = []string{"Content-Length", "Content-Type", "Host", "Transfer-Encoding", "Connection", "Accept-Encoding"}

// validateHeaders checks header names (HTTP tokens, not one the client
// sets itself) and the ${VAR} references in values.
func (c Config) validateHeaders(bad func(field, format string, args ...any)) {
	for name, value := range c.Headers {
		field := "headers." + name
		if !validHeaderName(name) {
			bad(field, "not a valid HTTP header name")
			continue
		}
		for _, r := range reservedHeaders {
			if strings.EqualFold(name, r) {
				bad(field, "set by the client; it cannot be configured")
			}
		}
		if _, err := ParseHeaderValue(value); err != nil {
			bad(field, "%v", err)
		}
	}
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// HeaderPart is a piece of a header value: literal text, or the value of
// an environment variable (Env set).
type HeaderPart struct {
	Text string
	Env  string
}

// ParseHeaderValue splits a header value into literal text and ${VAR}
// references. "$$" is a literal "$"; any other "$" not starting "${" is
// literal too. A reference names a variable as a shell does:
// [A-Za-z_][A-Za-z0-9_]*.
func ParseHeaderValue(v string) ([]HeaderPart, error) {
	var parts []HeaderPart
	var lit strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' || c == 0 {
			return nil, fmt.Errorf("value holds a control character")
		}
		if c != '$' || i+1 >= len(v) {
			lit.WriteByte(c)
			continue
		}
		switch v[i+1] {
		case '$':
			lit.WriteByte('$')
			i++
			continue
		case '{':
		default:
			lit.WriteByte(c)
			continue
		}
		end := strings.IndexByte(v[i+2:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q: ${ without its closing }", v[i:])
		}
		name := v[i+2 : i+2+end]
		if !validEnvName(name) {
			return nil, fmt.Errorf("${%s}: not an environment variable name", name)
		}
		if lit.Len() > 0 {
			parts = append(parts, HeaderPart{Text: lit.String()})
			lit.Reset()
		}
		parts = append(parts, HeaderPart{Env: name})
		i += 2 + end
	}
	if lit.Len() > 0 {
		parts = append(parts, HeaderPart{Text: lit.String()})
	}
	return parts, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Identity says which model at which service answers a judge: what a
// cached reply or a recorded result depends on besides the request. The
// run description and summary name it; the judge's cache key holds it for
// every provider but openai (whose keys predate providers and stay as they
// were, model only, so existing stores and recordings keep their hits).
type Identity struct {
	Provider Provider `json:"provider"`
	Model    string   `json:"model"`
	// Endpoint is the base URL without user info, query or fragment, host
	// in lower case; for azure with the deployment and api-version.
	Endpoint string `json:"endpoint"`
}

// Identity of the judge; call it after WithDefaults.
func (c Config) Identity() Identity {
	id := Identity{Provider: c.Provider, Model: c.Model, Endpoint: endpointOf(c.BaseURL)}
	if id.Provider == "" {
		id.Provider = ProviderOpenAI
	}
	switch c.Provider {
	case ProviderAzure:
		id.Endpoint += "/openai/deployments/" + url.PathEscape(c.Deployment) + "?api-version=" + url.QueryEscape(c.APIVersion)
	case ProviderBedrock:
		// The region decides where the model runs and signs the request,
		// also behind an endpoint override.
		id.Endpoint += "?region=" + url.QueryEscape(c.Region)
	}
	return id
}

// endpointOf is base without what does not name the service: user info
// (possibly a secret), query and fragment, a trailing slash; the scheme
// and host in lower case.
func endpointOf(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return strings.TrimRight(base, "/")
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/")
}
