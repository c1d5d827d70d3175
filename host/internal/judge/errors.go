package judge

import (
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// errorf builds a typed error whose message starts with the judge's name
// and model, so a run summary says which judge failed without context.
func (j *Judge) errorf(code abi.Code, retryable bool, format string, args ...any) *abi.Error {
	msg := j.prefix() + fmt.Sprintf(format, args...)
	return &abi.Error{Code: code, Message: j.redact(msg), Retryable: retryable}
}

// prefix starts every error message of the judge.
func (j *Judge) prefix() string {
	return fmt.Sprintf("judge %s (%s): ", j.cfg.Name, j.cfg.Model)
}

// redact removes the API key and every secret part of a configured header
// from text that may have come from the server (some echo a prefix or all
// of a wrong key). The secrets never leave the host.
func (j *Judge) redact(s string) string {
	for _, secret := range j.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	if p, ok := j.provider.(interface{ extraSecrets() []string }); ok {
		for _, secret := range p.extraSecrets() {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// summary is a short description of a failure for logs.
func (f *failure) summary() string {
	if f.status != 0 {
		return fmt.Sprintf("HTTP %d: %s", f.status, f.detail)
	}
	return f.detail
}

// failureError turns the final failure of a call into the one error the
// caller sees.
func (j *Judge) failureError(f *failure, attempts int) *abi.Error {
	tries := fmt.Sprintf("%d attempt", attempts)
	if attempts != 1 {
		tries += "s"
	}
	detail := func() string {
		if f.detail == "" {
			return ""
		}
		return ": " + f.detail
	}
	switch f.kind {
	case failAuth:
		hint := "check the API key"
		if j.cfg.APIKeyEnv != "" {
			hint = "check the key in $" + j.cfg.APIKeyEnv
		}
		if j.cfg.Provider == judgeconfig.ProviderBedrock {
			hint = "check the AWS credentials (the standard chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, a role)"
		} else if j.apiKey == "" {
			hint = "no API key was given"
			if j.cfg.APIKeyEnv != "" {
				hint += " ($" + j.cfg.APIKeyEnv + " is empty)"
			}
		}
		status := "HTTP 401"
		switch f.status {
		case 0:
			status = "no request sent"
		case 401:
		default: // the Gemini API's 400 API_KEY_INVALID
			status = fmt.Sprintf("HTTP %d", f.status)
		}
		return j.errorf(abi.CodeJudge, false, "authentication failed (%s): %s%s", status, hint, detail())
	case failForbidden:
		return j.errorf(abi.CodeJudge, false, "permission denied (HTTP 403)%s", detail())
	case failNotFound:
		check := "base_url and model"
		switch j.cfg.Provider {
		case judgeconfig.ProviderAzure:
			check = "base_url, deployment and api_version"
		case judgeconfig.ProviderBedrock:
			check = "region and model (a model ID, or an inference profile where the model needs one)"
		}
		return j.errorf(abi.CodeJudge, false, "not found (HTTP 404) at %s: check %s%s", j.cfg.BaseURL, check, detail())
	case failRejected:
		return j.errorf(abi.CodeJudge, false, "request rejected (HTTP %d)%s", f.status, detail())
	case failRateLimited:
		return j.errorf(abi.CodeJudge, true, "rate limited (HTTP 429) after %s%s", tries, detail())
	case failServer:
		return j.errorf(abi.CodeJudge, true, "server error (HTTP %d) after %s%s", f.status, tries, detail())
	case failTimeout:
		return j.errorf(abi.CodeJudge, true, "timed out after %s per attempt, %s", j.cfg.Timeout, tries)
	case failStalled:
		return j.errorf(abi.CodeJudge, true, "stalled after %s%s", tries, detail())
	case failUnreachable, failRefused:
		return j.errorf(abi.CodeJudge, true, "cannot reach %s after %s%s", j.cfg.BaseURL, tries, detail())
	case failDNS:
		return j.errorf(abi.CodeJudge, false, "cannot reach %s: no such host, check base_url%s", j.cfg.BaseURL, detail())
	case failTLS:
		return j.errorf(abi.CodeJudge, false, "cannot reach %s: TLS failed (certificate or handshake; http vs https?)%s", j.cfg.BaseURL, detail())
	case failUnparseable:
		return j.errorf(abi.CodeJudge, false, "unparseable reply (HTTP %d)%s", f.status, detail())
	case failErrorBody:
		return j.errorf(abi.CodeJudge, false, "the server answered HTTP %d with an error instead of a completion%s", f.status, detail())
	case failCancelled:
		return j.errorf(abi.CodeJudge, false, "cancelled after %s%s", tries, detail())
	}
	return j.errorf(abi.CodeJudge, false, "failed after %s%s", tries, detail())
}
