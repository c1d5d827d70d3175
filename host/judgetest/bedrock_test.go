package judgetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The fake refuses what Converse refuses.
func TestBedrockRefusesBodies(t *testing.T) {
	const msg = `"messages":[{"role":"user","content":[{"text":"x"}]}]`
	for _, tc := range []struct{ body, want string }{
		{`{"messages":[]}`, "messages field is required"},
		{`{"messages":[{"role":"assistant","content":[{"text":"x"}]}]}`, "must start with a user message"},
		{`{"messages":[{"role":"user","content":[{"text":"x"}]},{"role":"user","content":[{"text":"y"}]}]}`, "must alternate"},
		{`{"messages":[{"role":"system","content":[{"text":"x"}]}]}`, "enum value set: [user, assistant]"},
		{`{"messages":[{"role":"user","content":[]}]}`, "content field in the Message object at messages.0 is empty"},
		{`{` + msg + `,"n":2}`, "extraneous key [n]"},
		{`{` + msg + `,"inferenceConfig":{"temperature":1.5}}`, "temperature"},
		{`{` + msg + `,"inferenceConfig":{"maxTokens":0}}`, "maxTokens"},
		{`{` + msg + `,"toolConfig":{"tools":[{"toolSpec":{"name":"t","inputSchema":{"json":{"type":"array"}}}}]}}`, "must be one of the following: object"},
		{`{` + msg + `,"toolConfig":{"tools":[{"toolSpec":{"name":"t","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"u"}}}}`, "not defined in toolConfig.tools"},
	} {
		if _, _, err := parseBedrock("m", []byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.body, err, tc.want)
		}
	}
	req, tool, err := parseBedrock("m", []byte(`{"system":[{"text":"s"}],`+msg+`,"inferenceConfig":{"maxTokens":5,"temperature":0.5},`+
		`"toolConfig":{"tools":[{"toolSpec":{"name":"t","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"t"}}}}`))
	if err != nil || tool != "t" || req.MaxTokens != 5 || *req.Temperature != 0.5 || len(req.Messages) != 2 || req.Messages[0].Role != "system" {
		t.Errorf("parse = %+v, %q, %v", req, tool, err)
	}
}

// sign signs a Converse request as the SDK does.
func sign(t *testing.T, url, akid, secret, region string, body []byte, at time.Time) *http.Request {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret},
		req, hex.EncodeToString(sum[:]), BedrockService, region, at); err != nil {
		t.Fatal(err)
	}
	return req
}

// The signature is recomputed: a good one passes, and each way of getting
// it wrong is refused with the API's exception.
func TestBedrockVerifiesSignatures(t *testing.T) {
	s := New(t, Bedrock("eu-west-3", "AKIDTEST", "secret"))
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`)
	url := s.URL() + "/model/anthropic.claude-v2%3A1/converse"
	do := func(req *http.Request) (int, string) {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		typ, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
		return resp.StatusCode, typ
	}
	if code, typ := do(sign(t, url, "AKIDTEST", "secret", "eu-west-3", body, time.Now())); code != 200 {
		t.Fatalf("a good signature: %d %s", code, typ)
	}
	if got := s.Requests()[0].Model; got != "anthropic.claude-v2:1" {
		t.Errorf("model %q", got)
	}
	tampered := sign(t, url, "AKIDTEST", "secret", "eu-west-3", body, time.Now())
	tampered.Body = http.NoBody
	tampered.Body = readCloser(bytes.NewReader([]byte(`{"messages":[{"role":"user","content":[{"text":"y"}]}]}`)))
	for name, tc := range map[string]struct {
		req  *http.Request
		want string
	}{
		"wrong secret": {sign(t, url, "AKIDTEST", "other", "eu-west-3", body, time.Now()), "InvalidSignatureException"},
		"unknown key":  {sign(t, url, "AKIDOTHER", "secret", "eu-west-3", body, time.Now()), "UnrecognizedClientException"},
		"wrong region": {sign(t, url, "AKIDTEST", "secret", "us-east-1", body, time.Now()), "InvalidSignatureException"},
		"too old":      {sign(t, url, "AKIDTEST", "secret", "eu-west-3", body, time.Now().Add(-time.Hour)), "InvalidSignatureException"},
		"tampered":     {tampered, "InvalidSignatureException"},
	} {
		if code, typ := do(tc.req); code != 403 || typ != tc.want {
			t.Errorf("%s: %d %s; want 403 %s", name, code, typ, tc.want)
		}
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func readCloser(r *bytes.Reader) nopCloser { return nopCloser{r} }
