package geval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// TestSameConfigSeesEveryField: changing any one field (or a rubric
// band's) of a config makes it another config, so a new field of Config
// cannot be forgotten by sameConfig.
func TestSameConfigSeesEveryField(t *testing.T) {
	one, zero := 1, 0
	yes := true
	base := Config{Name: "n", Description: "d", Criteria: "c", EvaluationSteps: []string{"s"},
		EvaluationParams: []string{"input"}, Rubric: []RubricBand{{ScoreRange: []int{0, 10}, ExpectedOutcome: "o"}},
		ScoreRange: []int{0, 10}, TopLogprobs: &one, Samples: 2, Reason: &yes}
	if c := cloneConfig(&base); !sameConfig(&base, &c) {
		t.Fatal("a clone is not the same config")
	}
	var change func(v reflect.Value, path string)
	change = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+v.Type().Field(i).Name
			old := reflect.New(f.Type()).Elem()
			old.Set(f)
			switch f.Kind() {
			case reflect.String:
				f.SetString(f.String() + "x")
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.Int:
				f.SetInt(f.Int() + 1)
			case reflect.Pointer:
				if f.Type().Elem().Kind() == reflect.Bool {
					no := false
					f.Set(reflect.ValueOf(&no))
				} else {
					f.Set(reflect.ValueOf(&zero))
				}
			case reflect.Slice:
				if f.Type().Elem().Kind() == reflect.Struct {
					// Each field of the first element, then one element more.
					el := reflect.New(f.Type().Elem()).Elem()
					el.Set(f.Index(0))
					cp := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
					reflect.Copy(cp, f)
					f.Set(cp)
					for j := range el.NumField() {
						sub := f.Index(0).Field(j)
						was := reflect.New(sub.Type()).Elem()
						was.Set(sub)
						if sub.Kind() == reflect.String {
							sub.SetString(sub.String() + "x")
						} else {
							sub.Set(reflect.ValueOf([]int{0, 9}))
						}
						if sameConfig(&base, v.Addr().Interface().(*Config)) {
							t.Errorf("sameConfig misses %s[0].%s", name, el.Type().Field(j).Name)
						}
						sub.Set(was)
					}
				}
				f.Set(reflect.Append(f, f.Index(0)))
			default:
				t.Fatalf("%s: a %s field; teach this test to change it", name, f.Kind())
			}
			if c := cloneConfig(&base); sameConfig(&c, v.Addr().Interface().(*Config)) {
				t.Errorf("sameConfig misses %s", name)
			}
			f.Set(old)
		}
	}
	changed := cloneConfig(&base)
	change(reflect.ValueOf(&changed).Elem(), "")
}

type echoHost struct{}

// Judge answers with the prompt as the reason (its system message, which
// holds the metric's instructions, then its user message, the case) and
// a score in the requested range that follows the prompt's length, so
// that a case scored with another metric's prompt shows.
func (echoHost) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		prompt := r.Messages[0].Content + r.Messages[1].Content
		n := len(prompt) % 11
		if sc := r.Score; sc != nil {
			n = sc.Min + len(prompt)%(sc.Max-sc.Min+1)
		}
		out[i] = abi.JudgeResponse{JSON: json.RawMessage(fmt.Sprintf(`{"reason":%q,"score":%d}`, prompt, n)),
			Score: &abi.ScoreResult{Raw: n, Value: float64(n), Mode: abi.ScoreRaw}}
	}
	return out, nil
}

func (echoHost) Log(context.Context, slog.Level, string, ...any) {}

// TestPlansPerMetric: metrics sharing a kind, called concurrently and
// interleaved, each get their own config's and steps' prompt — the one a
// kind without plans sends — and a config left invalid is refused every
// time.
func TestPlansPerMetric(t *testing.T) {
	k := Kind()
	p := Plugin()
	p.Kinds[0] = k
	var metrics []struct{ cfg, prepared string }
	for i, cfg := range promptConfigs {
		for j := range 2 {
			metrics = append(metrics, struct{ cfg, prepared string }{cfg, fmt.Sprintf(`{"steps":["step %d of %d"],"source":"provided"}`, j, i)})
		}
	}
	// More metrics than plans kept, so plans are also dropped and remade.
	for i := range maxPlans {
		metrics = append(metrics, struct{ cfg, prepared string }{fmt.Sprintf(`{"criteria":"c%d","evaluation_params":["input"]}`, i), `{"steps":["s"]}`})
	}
	want := func(cfg, prepared string, c *abi.TestCase) string {
		s := setupOf(t, cfg)
		var st State
		json.Unmarshal([]byte(prepared), &st)
		ms := oldScoreMessages(s, st.Steps, c)
		return ms[0].Content + ms[1].Content
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				for i, m := range metrics {
					c := promptCases[2]
					c.ID = fmt.Sprint(g, round, i)
					c.ActualOutput, c.ExpectedOutput = fmt.Sprint("out ", g+round+i), "expected"
					c.Extra = map[string]json.RawMessage{"my_field": json.RawMessage(`"mine"`)}
					for _, f := range "abcdefghi" {
						c.Extra[string(f)] = json.RawMessage(fmt.Sprintf(`"%c%d"`, f, round))
					}
					res := p.Measure(context.Background(), echoHost{}, &abi.MeasureRequest{Kind: KindName, Metric: "m",
						Config: json.RawMessage(m.cfg), Prepared: json.RawMessage(m.prepared), Case: c})
					if res.Error != nil {
						t.Errorf("%s: %v", m.cfg, res.Error)
						return
					}
					if w := want(m.cfg, m.prepared, &c); res.Reason != w && res.Reason != "" {
						t.Errorf("metric %d got the prompt\n%s\nwant\n%s", i, res.Reason, w)
						return
					}
				}
				res := p.Measure(context.Background(), echoHost{}, &abi.MeasureRequest{Kind: KindName, Metric: "m",
					Config: json.RawMessage(promptConfigs[0]), Prepared: json.RawMessage(`{"steps":[]}`), Case: promptCases[0]})
				if res.Error == nil || res.Error.Message != `geval: prepared state is not a list of steps: {"steps":[]}` {
					t.Errorf("empty steps: %+v", res.Error)
				}
			}
		}()
	}
	wg.Wait()
}
