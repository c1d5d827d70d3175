package judge

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// newAzureProvider is the OpenAI wire on Azure OpenAI, through openai-go's
// Azure options: the resource endpoint and api-version
// (azure.WithEndpoint, which puts the body's model — here the deployment —
// in the path: /openai/deployments/{deployment}/chat/completions), and
// the api-key header or an Entra ID bearer token.
//
// openai-go v3 sends an Azure credential only over https, or over plain
// http to a loopback address when asked to (azure.WithUnsafeAllowHTTP: a
// local fake resource), and refuses a configured header that would carry
// a second credential. It refuses them at each request, as an error the
// retry layer would take for a network failure; they are refused here,
// once, as configuration.
func newAzureProvider(cfg Config, httpClient *http.Client, credential string, headers http.Header) (*openaiProvider, error) {
	opts := []option.RequestOption{
		azure.WithEndpoint(cfg.BaseURL, cfg.APIVersion),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
		option.WithMiddleware(limitReplyBody(maxReplyBytes)),
	}
	if credential != "" {
		plain, err := azurePlainHTTP(cfg.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("judge %q: base_url: %w", cfg.Name, err)
		}
		if plain {
			opts = append(opts, azure.WithUnsafeAllowHTTP())
		}
		for _, name := range []string{"Authorization", "Api-Key"} {
			if headers.Get(name) != "" {
				return nil, fmt.Errorf("judge %q: headers.%s: an Azure judge sends its credential (%s) itself; remove the header", cfg.Name, name, cfg.CredentialEnv())
			}
		}
	}
	switch {
	case credential == "":
	case cfg.EntraTokenEnv != "":
		opts = append(opts, azure.WithTokenCredential(staticToken(credential)))
	default:
		opts = append(opts, azure.WithAPIKey(credential))
	}
	opts = append(opts, headerOptions(headers)...)
	return &openaiProvider{api: openai.Client{Options: slices.Clip(opts)}, model: cfg.Deployment, azure: true}, nil
}

// azurePlainHTTP says whether endpoint is plain http to a loopback
// address, the one case an Azure credential may travel unencrypted, and
// refuses plain http to anywhere else.
func azurePlainHTTP(endpoint string) (bool, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false, err
	}
	if !strings.EqualFold(u.Scheme, "http") {
		return false, nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return true, nil
	}
	return false, fmt.Errorf("%q: an Azure credential is only sent over https (plain http only to a loopback address, for a local fake)", endpoint)
}

// staticToken is an Entra ID access token read from the environment, as
// azcore's bearer-token policy asks for one. It is not refreshed: a token
// lives about an hour, and a longer run needs a token that outlives it.
type staticToken string

// staticTokenLife is what the token is said to live, so the policy never
// asks again; the service has the last word on expiry (HTTP 401).
const staticTokenLife = 24 * time.Hour

func (t staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(t), ExpiresOn: time.Now().Add(staticTokenLife)}, nil
}
