package duration

import (
	"encoding/json"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestYAMLAndJSONAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml, json string
		want       time.Duration
	}{
		{"30s", `"30s"`, 30 * time.Second},
		{"30", `30`, 30 * time.Second},
		{`"30"`, `"30"`, 30 * time.Second},
		{"1.5", `1.5`, 1500 * time.Millisecond},
		{"2m", `"2m"`, 2 * time.Minute},
		{"250ms", `"250ms"`, 250 * time.Millisecond},
		{"-5s", `-5`, -5 * time.Second},
	} {
		var y struct {
			D Duration `yaml:"d"`
		}
		if err := yaml.Unmarshal([]byte("d: "+tc.yaml), &y); err != nil {
			t.Fatalf("yaml %q: %v", tc.yaml, err)
		}
		var j Duration
		if err := json.Unmarshal([]byte(tc.json), &j); err != nil {
			t.Fatalf("json %s: %v", tc.json, err)
		}
		if y.D.Std() != tc.want || j.Std() != tc.want {
			t.Errorf("yaml %q → %v, json %s → %v, want %v", tc.yaml, y.D, tc.json, j, tc.want)
		}
	}
}

func TestRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"soon", "1e400", "NaN", "+Inf", "30 s"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`1e300`), &d); err == nil {
		t.Errorf("json 1e300 accepted as %v", d)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Duration(90 * time.Second))
	if err != nil || string(b) != `"1m30s"` {
		t.Fatalf("marshal: %s %v", b, err)
	}
}
