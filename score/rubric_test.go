package score

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestBandUnmarshalJSON(t *testing.T) {
	t.Parallel()
	var got []Band
	in := `[
		{"score_range": [0, 2], "expected_outcome": "wrong"},
		{"start": 3, "end": 6, "expected_outcome": "partly right"},
		{"score_range": [7.0, 10], "expected_outcome": "right"}
	]`
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := []Band{{0, 2, "wrong"}, {3, 6, "partly right"}, {7, 10, "right"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	// The encoded form decodes back.
	out, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var back []Band
	if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, want) {
		t.Errorf("round trip %s: %+v, %v", out, back, err)
	}

	for _, tc := range []struct{ in, msg string }{
		{`{"score_range": [0, 2, 4], "expected_outcome": "x"}`, "score_range must be a [start, end] pair"},
		{`{"score_range": "0-2", "expected_outcome": "x"}`, "score_range must be a [start, end] pair"},
		{`{"score_range": [0, 2.5], "expected_outcome": "x"}`, "score_range end must be an integer, got 2.5"},
		{`{"score_range": ["0", 2], "expected_outcome": "x"}`, `score_range start must be an integer, got "0"`},
		{`{"score_range": [0, 2], "start": 0, "expected_outcome": "x"}`, "give score_range or start/end, not both"},
		{`{"start": 0, "expected_outcome": "x"}`, "missing score_range [start, end]"},
		{`{"score_range": [0, 2], "expected_outcom": "x"}`, `unknown field "expected_outcom"`},
		{`{"score_range": [0, 2], "expected_outcome": 3}`, "rubric band [0,2]: expected_outcome must be a string"},
		{`[0, 2]`, "rubric band:"},
	} {
		var b Band
		err := json.Unmarshal([]byte(tc.in), &b)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Unmarshal(%s) error %v, want %q", tc.in, err, tc.msg)
		}
	}
}

// TestBandUnmarshalYAML drives UnmarshalYAML the way a YAML decoder does:
// the callback decodes the node into the given value (YAML yields int and
// float64 for numbers, as JSON into any yields float64 here).
func TestBandUnmarshalYAML(t *testing.T) {
	t.Parallel()
	decode := func(doc string) func(any) error {
		return func(v any) error { return json.Unmarshal([]byte(doc), v) }
	}
	var b Band
	if err := b.UnmarshalYAML(decode(`{"score_range": [3, 5], "expected_outcome": "ok"}`)); err != nil {
		t.Fatal(err)
	}
	if b != (Band{3, 5, "ok"}) {
		t.Errorf("got %+v", b)
	}
	if err := b.UnmarshalYAML(decode(`{"start": 1, "end": 2, "expected_outcome": "low"}`)); err != nil || b != (Band{1, 2, "low"}) {
		t.Errorf("got %+v, %v", b, err)
	}
	// YAML's own integer types.
	ints := func(v any) error {
		*(v.(*map[string]any)) = map[string]any{"score_range": []any{int64(4), uint64(6)}, "expected_outcome": "mid"}
		return nil
	}
	if err := b.UnmarshalYAML(ints); err != nil || b != (Band{4, 6, "mid"}) {
		t.Errorf("got %+v, %v", b, err)
	}
	b = Band{1, 2, "keep"}
	if err := b.UnmarshalYAML(decode(`{"score_range": [1, 2], "bogus": 1}`)); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("error %v", err)
	}
	if b != (Band{1, 2, "keep"}) {
		t.Errorf("a failed decode changed the band: %+v", b)
	}
	if err := b.UnmarshalYAML(func(any) error { return errors.New("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %v", err)
	}
}

func TestValidateRubric(t *testing.T) {
	t.Parallel()
	ok := []Band{{0, 2, "wrong"}, {3, 6, "partly"}, {7, 9, "mostly"}, {10, 10, "right"}}
	if w, err := ValidateRubric(ok); err != nil || len(w) != 0 {
		t.Errorf("valid rubric: warnings %q, error %v", w, err)
	}
	if w, err := ValidateRubric(nil); err != nil || len(w) != 0 {
		t.Errorf("empty rubric: warnings %q, error %v", w, err)
	}

	w, err := ValidateRubric([]Band{{0, 2, "wrong"}, {5, 10, "right"}})
	if err != nil || !reflect.DeepEqual(w, []string{"rubric bands [0,2] and [5,10] leave 3-4 uncovered"}) {
		t.Errorf("gap: warnings %q, error %v", w, err)
	}
	w, err = ValidateRubric([]Band{{0, 2, "a"}, {4, 6, "b"}, {8, 10, "c"}})
	want := []string{"rubric bands [0,2] and [4,6] leave 3 uncovered", "rubric bands [4,6] and [8,10] leave 7 uncovered"}
	if err != nil || !reflect.DeepEqual(w, want) {
		t.Errorf("gaps: warnings %q, error %v", w, err)
	}

	for _, tc := range []struct {
		name  string
		bands []Band
		msgs  []string
	}{
		{"overlap sharing one score", []Band{{0, 3, "a"}, {3, 5, "b"}},
			[]string{"invalid rubric: bands [0,3] and [3,5] overlap on 3"}},
		{"overlap on a span", []Band{{0, 5, "a"}, {2, 4, "b"}, {6, 10, "c"}},
			[]string{"invalid rubric: bands [0,5] and [2,4] overlap on 2-4"}},
		{"same start", []Band{{0, 2, "a"}, {0, 4, "b"}},
			[]string{"invalid rubric: bands [0,2] and [0,4] overlap on 0-2"}},
		{"unsorted", []Band{{5, 10, "a"}, {0, 2, "b"}},
			[]string{"invalid rubric: bands out of order: [5,10] comes before [0,2]; sort them by start"}},
		{"outside 0-10", []Band{{0, 7, "a"}, {8, 12, "b"}},
			[]string{"invalid rubric: band [8,12] lies outside 0-10"}},
		{"negative", []Band{{-1, 4, "a"}, {5, 10, "b"}},
			[]string{"invalid rubric: band [-1,4] lies outside 0-10"}},
		{"start after end", []Band{{0, 2, "a"}, {6, 3, "b"}},
			[]string{"invalid rubric: band [6,3] starts after it ends"}},
		{"empty outcome", []Band{{0, 5, " "}, {6, 10, "b"}},
			[]string{"invalid rubric: band [0,5] has an empty expected_outcome"}},
		{"single score", []Band{{5, 5, "a"}},
			[]string{"invalid rubric: the bands cover only score 5; a rubric needs a range of at least two scores"}},
		{"several problems at once", []Band{{0, 3, ""}, {3, 11, "b"}},
			[]string{
				"invalid rubric: band [0,3] has an empty expected_outcome",
				"invalid rubric: band [3,11] lies outside 0-10",
				"invalid rubric: bands [0,3] and [3,11] overlap on 3",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidateRubric(tc.bands)
			if !errors.Is(err, ErrRubric) {
				t.Fatalf("error %v, want ErrRubric", err)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.msgs) {
				t.Errorf("error lines %q, want %q", got, tc.msgs)
			}
		})
	}
}

func TestBandFor(t *testing.T) {
	t.Parallel()
	bands := []Band{{0, 2, "wrong"}, {3, 6, "partly"}, {7, 10, "right"}}
	for _, tc := range []struct {
		score float64
		want  int // index into bands, -1 for none
	}{
		{0, 0}, {2.4, 0}, {2.5, 1}, {6.49, 1}, {6.5, 2}, {10, 2},
		{-0.4, 0}, {-0.5, -1}, {10.6, -1}, {math.NaN(), -1}, {math.Inf(1), -1},
	} {
		b, ok := BandFor(bands, tc.score)
		if tc.want < 0 {
			if ok {
				t.Errorf("BandFor(%v) = %v, want none", tc.score, b)
			}
			continue
		}
		if !ok || b != bands[tc.want] {
			t.Errorf("BandFor(%v) = %v, %v; want %v", tc.score, b, ok, bands[tc.want])
		}
	}
	// A gap holds no band.
	if b, ok := BandFor([]Band{{0, 2, "a"}, {5, 10, "b"}}, 3.2); ok {
		t.Errorf("BandFor in a gap = %v", b)
	}
}

func TestRubricRange(t *testing.T) {
	t.Parallel()
	if lo, hi := RubricRange(nil); lo != 0 || hi != 10 {
		t.Errorf("empty: %d, %d", lo, hi)
	}
	if lo, hi := RubricRange([]Band{{1, 2, "a"}, {3, 5, "b"}}); lo != 1 || hi != 5 {
		t.Errorf("got %d, %d; want 1, 5", lo, hi)
	}
	if lo, hi := RubricRange([]Band{{4, 8, "a"}, {2, 3, "b"}}); lo != 2 || hi != 8 {
		t.Errorf("unsorted: got %d, %d; want 2, 8", lo, hi)
	}
}
