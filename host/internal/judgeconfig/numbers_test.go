package judgeconfig

import (
	"strings"
	"testing"
)

func TestNumberTokensFor(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  NumberTokens
	}{
		{"gpt-4o-mini", NumbersWhole},
		{"openai/gpt-4.1", NumbersWhole},
		{"ft:gpt-4o-mini:org::abc", NumbersWhole},
		{"GPT-5", NumbersWhole},
		{"o3-mini", NumbersWhole},
		{"gpt-3.5-turbo", NumbersWhole},
		{"meta-llama/Meta-Llama-3.1-8B-Instruct", NumbersWhole},
		{"llama3.2:3b", NumbersWhole},
		{"llama2:13b", NumbersDigits},
		{"mistral-large-latest", NumbersDigits},
		{"qwen2.5:7b", NumbersDigits},
		{"gemini-2.0-flash", NumbersDigits},
		{"deepseek-chat", NumbersDigits},
		{"my-private-model", NumbersDigits},
		{"", NumbersDigits},
	} {
		if got := NumberTokensFor(tc.model); got != tc.want {
			t.Errorf("NumberTokensFor(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

func TestNumberTokensResolveAndDecode(t *testing.T) {
	for _, tc := range []struct {
		setting NumberTokens
		model   string
		want    NumberTokens
	}{
		{"", "gpt-4o", NumbersWhole},
		{NumbersAuto, "qwen2", NumbersDigits},
		{NumbersDigits, "gpt-4o", NumbersDigits},
		{NumbersWhole, "qwen2", NumbersWhole},
	} {
		if got := tc.setting.Resolve(tc.model); got != tc.want {
			t.Errorf("%q.Resolve(%q) = %q, want %q", tc.setting, tc.model, got, tc.want)
		}
	}
	var n NumberTokens
	for _, good := range []string{"whole", "digits", "auto"} {
		if err := n.UnmarshalText([]byte(good)); err != nil || string(n) != good {
			t.Errorf("UnmarshalText(%q) = %q, %v", good, n, err)
		}
	}
	for _, bad := range []string{"", "Whole", "digit", "1"} {
		if err := n.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", bad)
		}
	}
	c := Config{Name: "j", Model: "m", BaseURL: "http://127.0.0.1:1/v1"}.WithDefaults()
	if c.NumberTokens != NumbersAuto {
		t.Errorf("default number_tokens %q, want auto", c.NumberTokens)
	}
	c.NumberTokens = "sometimes"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `number_tokens: "sometimes"`) {
		t.Errorf("Validate: %v", err)
	}
}
