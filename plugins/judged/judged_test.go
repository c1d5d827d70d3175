package judged_test

import (
	"testing"

	"github.com/agentanvil/anvil/plugins/judged"
)

func TestParseVerdicts(t *testing.T) {
	yni := []string{judged.Yes, judged.No, judged.Idk}
	items := []string{"a", "b"}
	for _, tc := range []struct {
		raw, problem string
		want         []judged.Verdict
	}{
		{`{"verdicts":[{"verdict":" Yes.","reason":" r "},{"verdict":"IDK"}]}`, "",
			[]judged.Verdict{{Item: "a", Verdict: "yes", Reason: "r"}, {Item: "b", Verdict: "idk"}}},
		{`{"verdicts":[{"verdict":"yes"}]}`, "1 verdict for 2 claims", nil},
		{`{"verdicts":[{"verdict":"yes"},{"verdict":"maybe"}]}`, `verdict 2 is "maybe", not "yes", "no" or "idk"`, nil},
		{`{"verdict":[]}`, `not a JSON object with a "verdicts" list`, nil},
		{`[]`, `not a JSON object with a "verdicts" list`, nil},
	} {
		vs, problem := judged.ParseVerdicts([]byte(tc.raw), items, "claim", yni)
		if problem != tc.problem || len(vs) != len(tc.want) {
			t.Errorf("%s: %v %q", tc.raw, vs, problem)
			continue
		}
		for i := range vs {
			if vs[i] != tc.want[i] {
				t.Errorf("%s: verdict %d = %+v", tc.raw, i, vs[i])
			}
		}
	}
}

func TestParseItemVerdicts(t *testing.T) {
	yn := []string{judged.Yes, judged.No}
	for _, tc := range []struct {
		raw, problem string
		n            int
	}{
		{`{"opinions":[{"opinion":"x","verdict":"no","reason":""},{"opinion":"y","verdict":"Yes","reason":"z"}]}`, "", 2},
		{`{"opinions":[]}`, "", 0},
		{`{"opinions":[{"opinion":" ","verdict":"no"}]}`, `verdict 1 has no "opinion"`, 0},
		{`{"opinions":[{"opinion":"x","verdict":"idk"}]}`, `verdict 1 is "idk", not "yes" or "no"`, 0},
		{`{"opinions":null}`, `not a JSON object with a "opinions" list`, 0},
	} {
		vs, problem := judged.ParseItemVerdicts([]byte(tc.raw), "opinions", "opinion", yn)
		if problem != tc.problem || len(vs) != tc.n {
			t.Errorf("%s: %v %q", tc.raw, vs, problem)
		}
	}
}

// A judge reply is untrusted: any bytes decode to verdicts or a problem,
// never a panic, and valid verdicts are one per item, each a known value.
func FuzzParseVerdicts(f *testing.F) {
	f.Add([]byte(`{"verdicts":[{"verdict":"yes","reason":"r"},{"verdict":"no"}]}`))
	f.Add([]byte(`{"opinions":[{"opinion":"x","verdict":"no","reason":""}]}`))
	f.Add([]byte(`{"verdicts":[{"verdict":null}]}`))
	yn := []string{judged.Yes, judged.No}
	f.Fuzz(func(t *testing.T, raw []byte) {
		vs, problem := judged.ParseVerdicts(raw, []string{"a", "b"}, "item", yn)
		if problem == "" && len(vs) != 2 {
			t.Fatalf("%d verdicts for 2 items without a problem", len(vs))
		}
		for _, v := range vs {
			if v.Verdict != judged.Yes && v.Verdict != judged.No {
				t.Fatalf("verdict %q", v.Verdict)
			}
		}
		for _, key := range []string{"verdicts", "opinions"} {
			vs, problem = judged.ParseItemVerdicts(raw, key, "opinion", yn)
			for _, v := range vs {
				if problem != "" || v.Item == "" || (v.Verdict != judged.Yes && v.Verdict != judged.No) {
					t.Fatalf("verdict %+v with problem %q", v, problem)
				}
			}
		}
	})
}
