package judgetest

import (
	"net/http"
	"strings"
)

// azureSpec is what an Azure OpenAI resource serves: one deployment at one
// api-version, authenticated by the api-key header or an Entra ID token.
type azureSpec struct {
	deployment, apiVersion string
	entra                  bool
	// embedDeployment serves /embeddings (AzureEmbeddings).
	embedDeployment string
}

// AzureEmbeddings makes an Azure server serve embeddings from deployment
// (POST /openai/deployments/{deployment}/embeddings); another deployment
// is DeploymentNotFound there as for completions.
func AzureEmbeddings(deployment string) Option {
	return func(s *Server) {
		if s.azure != nil {
			s.azure.embedDeployment = deployment
		}
	}
}

// Azure makes the server an Azure OpenAI resource serving deployment at
// apiVersion: POST /openai/deployments/{deployment}/chat/completions?api-version=…,
// the key (WithAPIKey) in the api-key header. It serves Azure's Batch API
// too (batch.go), at the same api-version and key: POST /openai/files,
// GET /openai/files/{id}/content, POST /openai/batches, GET
// /openai/batches/{id} and POST /openai/batches/{id}/cancel, each line's
// url /chat/completions and its model the deployment. Anything else fails as
// Azure fails it: another path or an unknown api-version 404, another
// deployment 404 DeploymentNotFound, a missing or wrong key 401, a
// key sent as a bearer token 401.
func Azure(deployment, apiVersion string) Option {
	return func(s *Server) { s.azure = &azureSpec{deployment: deployment, apiVersion: apiVersion} }
}

// AzureEntra makes an Azure server take the key (WithAPIKey) as an Entra
// ID bearer token in Authorization instead of the api-key header.
func AzureEntra() Option {
	return func(s *Server) {
		if s.azure != nil {
			s.azure.entra = true
		}
	}
}

func (s *Server) serveAzure(w http.ResponseWriter, r *http.Request) {
	const prefix = "/openai/deployments/"
	suffix := "/chat/completions"
	if strings.HasSuffix(r.URL.Path, "/embeddings") {
		suffix = "/embeddings"
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, prefix) || !strings.HasSuffix(r.URL.Path, suffix) {
		s.calls.Add(1)
		writeAzureError(w, http.StatusNotFound, "404", "Resource not found")
		return
	}
	if !s.azureAuthorized(w, r) {
		s.calls.Add(1)
		return
	}
	want := s.azure.deployment
	if suffix == "/embeddings" {
		want = s.azure.embedDeployment
	}
	if deployment := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, prefix), suffix); deployment != want || want == "" {
		s.calls.Add(1)
		writeAzureError(w, http.StatusNotFound, "DeploymentNotFound",
			"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.")
		return
	}
	if suffix == "/embeddings" {
		s.serveEmbeddings(w, r)
		return
	}
	s.serveCompletion(w, r)
}

// azureAuthorized checks what every request to the resource needs — the
// one api-version it serves, the key in api-key (or the Entra token as a
// bearer token, and then no api-key) — and answers as Azure does if not.
func (s *Server) azureAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if got := r.URL.Query()["api-version"]; len(got) != 1 || got[0] != s.azure.apiVersion {
		writeAzureError(w, http.StatusNotFound, "404", "Resource not found")
		return false
	}
	if s.apiKey == "" {
		return true
	}
	ok := r.Header.Get("Api-Key") == s.apiKey && r.Header.Get("Authorization") == ""
	if s.azure.entra {
		ok = r.Header.Get("Authorization") == "Bearer "+s.apiKey && r.Header.Get("Api-Key") == ""
	}
	if !ok {
		writeAzureError(w, http.StatusUnauthorized, "401",
			"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
	}
	return ok
}

// writeAzureError writes Azure's error shape: {"error": {"code", "message"}}.
func writeAzureError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": message}})
}
