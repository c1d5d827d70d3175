package kwcovc_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

// TestParityWithGo runs the C module and the Go example (examples/kwcov/go,
// built from source here) on the same cases, configs and scripted judge,
// and requires the same results after JSON parsing: status, score,
// reason, details, error code, field and message, judge requests.
func TestParityWithGo(t *testing.T) {
	need(t)
	testkit.Long(t, "builds the Go example")
	goModule := filepath.Join(t.TempDir(), "kwcov-go.wasm")
	if _, err := testkit.BuildGuest(t.Context(), "../go", goModule); err != nil {
		t.Fatal(err)
	}
	if _, err := sdktest.WriteDigest(goModule); err != nil {
		t.Fatal(err)
	}

	metrics := []metricSpec{
		{name: "kw", keywords: paris},
		{name: "kw_cs", keywords: paris, caseSensitive: true},
		{name: "kw_unicode", keywords: []string{"café", "CAFÉ", "crème", "☕", "fondé", "Procope", "Paris", "Paris"}},
		{name: "kw_escapes", keywords: []string{"\"quoted\"", "back\\slash", "line\nbreak", "😀", "\x01", "PARIS", "absent \"one\""}},
		{name: "kw_empty_keyword", keywords: []string{"Paris", ""}},
		{name: "kw_judge", keywords: paris, judgeCheck: true},
	}
	for _, tc := range []struct {
		name  string
		grant bool
		reply judgetest.Reply
	}{
		{"judged", true, judgetest.Reply{Content: `{"verdict": true}`}},
		{"judge denied", false, judgetest.Reply{Content: `{"verdict": true}`}},
		{"judge unusable", true, judgetest.Reply{Content: "I think so."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := map[string]map[string]map[string]host.MetricResult{}
			requests := map[string][]judgetest.RecordedRequest{}
			for lang, mod := range map[string]string{"c": module, "go": goModule} {
				judge := judgetest.New(t)
				judge.On(judgetest.ContainsMessage("Lyon"), judgetest.Reply{Content: `{"verdict": false}`})
				judge.SetDefault(tc.reply)
				results[lang] = evaluateModule(t, mod, judge, tc.grant, metrics, cases)
				requests[lang] = judge.Requests()
			}
			for _, c := range cases {
				for _, m := range metrics {
					cr, gr := comparable(results["c"][c.ID][m.name]), comparable(results["go"][c.ID][m.name])
					if !reflect.DeepEqual(cr, gr) {
						t.Errorf("case %s, metric %s:\n C: %+v\nGo: %+v", c.ID, m.name, cr, gr)
					}
				}
			}
			if len(requests["c"]) != len(requests["go"]) {
				t.Fatalf("judge requests: C %d, Go %d", len(requests["c"]), len(requests["go"]))
			}
			bodies := map[string]int{}
			for _, r := range requests["go"] {
				bodies[canonical(t, r.Body)]++
			}
			for _, r := range requests["c"] {
				bodies[canonical(t, r.Body)]--
			}
			for b, n := range bodies {
				if n != 0 {
					t.Errorf("judge request sent %+d more times by Go than by C: %s", n, b)
				}
			}
		})
	}
}

type result struct {
	Status, Reason, ScoreMode string
	Score                     *float64
	Threshold                 float64
	Details                   any
	Error                     *abi.Error
	Requests                  int
}

// comparable keeps what a plugin decides, dropping what differs by plugin
// identity (the error's plugin and digest) or by timing.
func comparable(m host.MetricResult) result {
	r := result{Status: m.Status, Reason: m.Reason, ScoreMode: m.ScoreMode, Score: m.Score, Threshold: m.Threshold, Requests: m.Usage.Requests}
	if len(m.Details) > 0 {
		_ = json.Unmarshal(m.Details, &r.Details)
	}
	if m.Error != nil {
		e := *m.Error
		e.Plugin, e.Digest = "", ""
		r.Error = &e
	}
	return r
}

func canonical(t *testing.T, body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("judge request body %s: %v", body, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
