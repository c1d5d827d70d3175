// Package enginetest is what the tests that run the engine share — the
// engine's own, the cluster's and the CLI's: a judge speaking G-Eval whose
// scores they know by hand, the API key their configs name, and a run's
// results.jsonl read back as the product reads it.
package enginetest

import (
	"testing"

	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// KeyEnv is the environment variable the tests' configs read the judge's
// API key from (api_key_env); Getenv alone sets it.
const KeyEnv = "ANVIL_TEST_KEY"

// Getenv is an engine.Options.Getenv that knows KeyEnv alone.
func Getenv(k string) string {
	if k == KeyEnv {
		return "test-key"
	}
	return ""
}

// Agrees is a score of 8 with the alternatives 8:.7, 7:.2, 9:.1, whose
// weighted mean is 7.9 (normalised 0.79).
func Agrees() judgetest.Reply {
	return judgetest.JSONScoreReply("Agrees with the expected output.", "8", map[string]float64{"8": .7, "7": .2, "9": .1})
}

// GEval scripts s as a G-Eval judge: three steps for a steps request, 2
// (2:.9, 3:.1, normalised 0.21) for a prompt mentioning "Sydney", Agrees
// for any other; every reply reports usage u (none if nil).
func GEval(s *judgetest.Server, u *judgetest.Usage) {
	with := func(r judgetest.Reply) judgetest.Reply { r.Usage = u; return r }
	s.On(judgetest.ContainsMessage(`"steps"`), with(judgetest.Reply{
		Content: `{"steps": ["Compare the facts.", "Check agreement with the expected output.", "Penalise contradictions."]}`}))
	s.On(judgetest.ContainsMessage("Sydney"), with(judgetest.JSONScoreReply("Contradicts the expected output.", "2", map[string]float64{"2": .9, "3": .1})))
	s.SetDefault(with(Agrees()))
}

// GEvalJudge is a new judgetest server scripted by GEval, without usage.
func GEvalJudge(t testing.TB, opts ...judgetest.Option) *judgetest.Server {
	s := judgetest.New(t, opts...)
	GEval(s, nil)
	return s
}

// Results reads results.jsonl at path as the product does (strictly), in
// file order.
func Results(t testing.TB, path string) []results.CaseResult {
	t.Helper()
	var out []results.CaseResult
	if err := results.Each(path, func(r *results.CaseResult) error {
		out = append(out, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// ResultsByCase is Results by case id; a case written twice fails t.
func ResultsByCase(t testing.TB, path string) map[string]results.CaseResult {
	t.Helper()
	out := map[string]results.CaseResult{}
	for _, r := range Results(t, path) {
		if _, dup := out[r.CaseID]; dup {
			t.Fatalf("%s: case %s written twice", path, r.CaseID)
		}
		out[r.CaseID] = r
	}
	return out
}
