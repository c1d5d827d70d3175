package judgeconfig

import "strings"

// DefaultMaxInputTokens is the context window of model's family, in
// tokens, or 0 for a model Anvil does not know (then nothing is checked and
// the server has the last word). Provider prefixes ("openai/",
// "anthropic.", "meta-llama/") and Ollama tags (":8b") are ignored. Where a
// family's members differ the largest window is taken: a default too
// small would refuse requests the server accepts, one too large only lets
// the server refuse them itself.
func DefaultMaxInputTokens(model string) int {
	m := familyName(model)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("gpt-5"):
		return 272_000
	case has("gpt-4.1"):
		return 1_047_576
	case has("gpt-4o", "chatgpt-4o", "gpt-4-turbo", "gpt-4-1106", "gpt-4-0125", "gpt-4-vision"):
		return 128_000
	case has("gpt-4-32k"):
		return 32_768
	case m == "gpt-4" || has("gpt-4-0613", "gpt-4-0314"):
		return 8_192
	case has("gpt-3.5-turbo"):
		return 16_385
	case has("o1-mini", "o1-preview"):
		return 128_000
	case has("o1", "o3", "o4"):
		return 200_000
	case strings.Contains(m, "claude"):
		return 200_000
	case has("gemini"):
		return 1_048_576
	case has("llama-3.1", "llama-3.2", "llama-3.3", "llama3.1", "llama3.2", "llama3.3"):
		return 128_000
	case has("llama3-1", "llama3-2", "llama3-3"): // Bedrock's meta.llama3-1-70b-instruct-v1:0
		return 128_000
	case has("nova-pro", "nova-lite", "nova-premier"):
		return 300_000
	case has("nova-micro"):
		return 128_000
	case m == "llama3" || m == "llama-3" || has("llama-3-", "llama3-"):
		return 8_192
	case has("llama-2", "llama2"):
		return 4_096
	case has("mixtral"):
		return 65_536
	case has("mistral", "codestral", "ministral"):
		return 128_000
	case has("qwen-turbo"):
		return 1_000_000
	case has("qwen"):
		return 131_072
	case has("deepseek"):
		return 128_000
	}
	return 0
}

// DefaultMaxEmbeddingTokens is the input limit, in tokens, of one text
// to an embedding model of a family Anvil knows, or 0 (no check).
func DefaultMaxEmbeddingTokens(model string) int {
	m := familyName(model)
	switch {
	case strings.HasPrefix(m, "text-embedding-3"), strings.HasPrefix(m, "text-embedding-ada"):
		return 8_191
	case strings.HasPrefix(m, "gemini-embedding"), strings.HasPrefix(m, "text-embedding-004"), strings.HasPrefix(m, "embedding-001"):
		return 2_048
	case strings.HasPrefix(m, "titan-embed"):
		return 8_192
	case strings.HasPrefix(m, "embed-"): // Cohere's, on Bedrock: cohere.embed-english-v3
		return 512
	}
	return 0
}

// familyName reduces a model name to what its family is recognised by:
// lower case, without provider prefixes ("openai/", "meta-llama/"), the
// "ft:" of OpenAI fine-tunes, Ollama tags (":8b") or a leading "meta-".
func familyName(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if rest, ok := strings.CutPrefix(m, "ft:"); ok { // OpenAI fine-tunes: ft:gpt-4o-mini:org::id
		m = rest
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, ':'); i >= 0 {
		m = m[:i]
	}
	// Bedrock's model IDs: a cross-region profile's geography, then the
	// vendor ("us.anthropic.claude-…", "amazon.nova-pro-v1:0").
	for _, geo := range []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."} {
		if rest, ok := strings.CutPrefix(m, geo); ok {
			m = rest
			break
		}
	}
	for _, vendor := range []string{"amazon.", "anthropic.", "meta.", "mistral.", "cohere.", "ai21.", "deepseek.", "qwen.", "openai.", "writer."} {
		if rest, ok := strings.CutPrefix(m, vendor); ok {
			m = rest
			break
		}
	}
	return strings.TrimPrefix(m, "meta-")
}
