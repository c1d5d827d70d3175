package judge

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/azure"
	"github.com/openai/openai-go/option"
)

// newAzureProvider is the OpenAI wire on Azure OpenAI, through openai-go's
// Azure options: the resource endpoint and api-version
// (azure.WithEndpoint, which puts the body's model — here the deployment —
// in the path: /openai/deployments/{deployment}/chat/completions), and
// the api-key header or an Entra ID bearer token.
func newAzureProvider(cfg Config, httpClient *http.Client, credential string, headers http.Header) *openaiProvider {
	opts := []option.RequestOption{
		azure.WithEndpoint(cfg.BaseURL, cfg.APIVersion),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
		option.WithMiddleware(limitReplyBody(maxReplyBytes)),
	}
	switch {
	case credential == "":
	case cfg.EntraTokenEnv != "":
		opts = append(opts, azure.WithTokenCredential(staticToken(credential)))
	default:
		opts = append(opts, azure.WithAPIKey(credential))
	}
	opts = append(opts, headerOptions(headers)...)
	return &openaiProvider{api: openai.Client{Options: slices.Clip(opts)}, model: cfg.Deployment}
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
