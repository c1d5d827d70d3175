package judge

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// provider is one API's wire at the bottom of the stack: how a call of a
// plan becomes a request body, and how one attempt with it goes.
// Everything above it — cache, singleflight, budget, breaker, size, rate
// limit, retry, repair, scoring — is the judge's, one for every provider;
// a provider only translates.
type provider interface {
	// encode is the body of call c of p in mode; retries resend it.
	encode(p *plan, c call, mode schemaMode) ([]byte, error)
	// attempt sends body once. A reply that came but is not a usable
	// completion is a failure (its status set); an error from the
	// transport or the SDK comes back with the HTTP response it got, if
	// any, for Judge.classify.
	attempt(ctx context.Context, body []byte, need openaiwire.Need) (completion, *failure, *http.Response, error)
}

// newProvider builds the wire of cfg's provider.
func newProvider(cfg Config, httpClient *http.Client, apiKey string, headers http.Header) (provider, error) {
	switch cfg.Provider {
	case judgeconfig.ProviderOpenAI:
		return newOpenAIProvider(cfg, httpClient, apiKey, headers), nil
	case judgeconfig.ProviderAzure:
		return newAzureProvider(cfg, httpClient, apiKey, headers)
	case judgeconfig.ProviderAnthropic:
		return newAnthropicProvider(cfg, httpClient, apiKey, headers), nil
	case judgeconfig.ProviderGemini:
		return newGeminiProvider(cfg, httpClient, apiKey, headers), nil
	case judgeconfig.ProviderBedrock:
		// The AWS SDK's HTTP client, not httpClient (bedrock.go).
		return newBedrockProvider(cfg, headers), nil
	}
	return nil, fmt.Errorf("judge %q: provider: %q is not implemented by this build", cfg.Name, cfg.Provider)
}

// resolveHeaders reads the ${VAR} parts of the configured headers from the
// environment. The values read are secrets (redacted wherever the key is);
// a variable that is unset or empty is named in missing, with the header.
func resolveHeaders(cfg map[string]string, getenv func(string) string) (h http.Header, secrets []string, missing *abi.Error) {
	if len(cfg) == 0 {
		return nil, nil, nil
	}
	names := make([]string, 0, len(cfg))
	for name := range cfg {
		names = append(names, name)
	}
	sort.Strings(names)
	h = http.Header{}
	for _, name := range names {
		parts, err := judgeconfig.ParseHeaderValue(cfg[name])
		if err != nil { // Validate has refused it already
			return nil, nil, &abi.Error{Code: abi.CodeInvalidConfig, Field: "headers." + name, Message: "headers." + name + ": " + err.Error()}
		}
		var v []byte
		for _, part := range parts {
			if part.Env == "" {
				v = append(v, part.Text...)
				continue
			}
			val := getenv(part.Env)
			switch {
			case missing != nil:
			case val == "":
				missing = &abi.Error{Code: abi.CodeInvalidConfig, Field: "headers." + name,
					Message: "headers." + name + " takes $" + part.Env + ", which is not set: set it, or remove the header"}
			case strings.ContainsAny(val, "\r\n\x00"):
				missing = &abi.Error{Code: abi.CodeInvalidConfig, Field: "headers." + name,
					Message: "headers." + name + " takes $" + part.Env + ", whose value holds a line break or NUL: a header cannot carry it"}
			}
			if len(val) >= minSecretLen {
				secrets = append(secrets, val)
			}
			v = append(v, val...)
		}
		h.Set(name, string(v))
	}
	return h, secrets, missing
}

// minSecretLen is the shortest secret redacted: replacing every "a" of a
// message would say more about a one-letter key than leaving it.
const minSecretLen = 4
