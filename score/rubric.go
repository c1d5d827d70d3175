package score

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rubric bounds: bands are integers within [RubricMin, RubricMax].
const (
	RubricMin = 0
	RubricMax = 10
)

// Band is one rubric band: the scores Start..End (inclusive) and the
// outcome they stand for.
//
// It decodes, from JSON and from YAML, either DeepEval's Rubric shape
//
//	{score_range: [0, 2], expected_outcome: "..."}
//
// or the flat shape it encodes to
//
//	{start: 0, end: 2, expected_outcome: "..."}
//
// Unknown fields, both shapes at once, and non-integer bounds are errors.
type Band struct {
	Start    int    `json:"start" yaml:"start"`
	End      int    `json:"end" yaml:"end"`
	Expected string `json:"expected_outcome" yaml:"expected_outcome"`
}

// name is how messages refer to a band: its range, "[0,2]".
func (b Band) name() string { return fmt.Sprintf("[%d,%d]", b.Start, b.End) }

// UnmarshalJSON accepts both band shapes.
func (b *Band) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("rubric band: %w", err)
	}
	return b.fromMap(m)
}

// UnmarshalYAML accepts both band shapes. It has the callback signature
// that gopkg.in/yaml.v2, gopkg.in/yaml.v3 and go.yaml.in/yaml/v4 all
// honour, so this package needs no YAML dependency.
func (b *Band) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		return fmt.Errorf("rubric band: %w", err)
	}
	if m == nil {
		return nil
	}
	return b.fromMap(m)
}

func (b *Band) fromMap(m map[string]any) error {
	for k := range m {
		switch k {
		case "score_range", "start", "end", "expected_outcome":
		default:
			return fmt.Errorf("rubric band: unknown field %q (want score_range and expected_outcome)", k)
		}
	}
	var nb Band
	rng, hasRange := m["score_range"]
	s, hasStart := m["start"]
	e, hasEnd := m["end"]
	var err error
	switch {
	case hasRange && (hasStart || hasEnd):
		return errors.New("rubric band: give score_range or start/end, not both")
	case hasRange:
		pair, ok := rng.([]any)
		if !ok || len(pair) != 2 {
			return fmt.Errorf("rubric band: score_range must be a [start, end] pair, got %v", rng)
		}
		if nb.Start, err = bandInt("score_range start", pair[0]); err != nil {
			return err
		}
		if nb.End, err = bandInt("score_range end", pair[1]); err != nil {
			return err
		}
	case hasStart && hasEnd:
		if nb.Start, err = bandInt("start", s); err != nil {
			return err
		}
		if nb.End, err = bandInt("end", e); err != nil {
			return err
		}
	default:
		return errors.New("rubric band: missing score_range [start, end]")
	}
	if x, ok := m["expected_outcome"]; ok && x != nil {
		str, ok := x.(string)
		if !ok {
			return fmt.Errorf("rubric band %s: expected_outcome must be a string, got %v", nb.name(), x)
		}
		nb.Expected = str
	}
	*b = nb
	return nil
}

// bandInt reads an integer bound decoded from JSON (json.Number) or YAML
// (int, int64, uint64, float64).
func bandInt(what string, x any) (int, error) {
	var f float64
	switch v := x.(type) {
	case int:
		return v, nil
	case int64:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return int(v), nil
		}
		f = float64(v)
	case uint64:
		if v <= math.MaxInt32 {
			return int(v), nil
		}
		f = float64(v)
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i), nil
		}
		g, err := v.Float64()
		if err != nil {
			return 0, fmt.Errorf("rubric band: %s must be an integer, got %s", what, show(x))
		}
		f = g
	case float64:
		f = v
	default:
		return 0, fmt.Errorf("rubric band: %s must be an integer, got %s", what, show(x))
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, fmt.Errorf("rubric band: %s must be an integer, got %s", what, show(x))
	}
	return int(f), nil
}

func show(x any) string {
	if s, ok := x.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(x)
}

// ValidateRubric checks rubric bands: each within 0–10 with start <= end and
// a non-empty expected outcome; bands sorted ascending by start; no two
// bands sharing a score (so [0,3] and [3,5] overlap); at least two scores
// covered overall. Every violation is reported (errors joined, each
// wrapping ErrRubric and naming the bands). Scores left uncovered between
// two bands ("[0,2] and [5,10] leave 3-4 uncovered") are warnings. An empty
// rubric is valid.
func ValidateRubric(bands []Band) (warnings []string, err error) {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrRubric}, args...)...))
	}
	for _, b := range bands {
		if b.Start < RubricMin || b.Start > RubricMax || b.End < RubricMin || b.End > RubricMax {
			fail("band %s lies outside %d-%d", b.name(), RubricMin, RubricMax)
		}
		if b.Start > b.End {
			fail("band %s starts after it ends", b.name())
		}
		if strings.TrimSpace(b.Expected) == "" {
			fail("band %s has an empty expected_outcome", b.name())
		}
	}
	for i := 1; i < len(bands); i++ {
		prev, b := bands[i-1], bands[i]
		switch {
		case b.Start < prev.Start:
			fail("bands out of order: %s comes before %s; sort them by start", prev.name(), b.name())
		case b.Start <= prev.End:
			fail("bands %s and %s overlap on %s", prev.name(), b.name(), span(b.Start, min(prev.End, b.End)))
		case b.Start > prev.End+1:
			warnings = append(warnings, fmt.Sprintf("rubric bands %s and %s leave %s uncovered", prev.name(), b.name(), span(prev.End+1, b.Start-1)))
		}
	}
	if lo, hi := RubricRange(bands); len(bands) > 0 && lo == hi {
		fail("the bands cover only score %d; a rubric needs a range of at least two scores", lo)
	}
	return warnings, errors.Join(errs...)
}

func span(a, b int) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

// BandFor returns the band containing the score rounded to the nearest
// integer (halves away from zero), for reporting; false when no band holds
// it or the score is not finite.
func BandFor(bands []Band, score float64) (Band, bool) {
	if math.IsNaN(score) || math.IsInf(score, 0) {
		return Band{}, false
	}
	r := math.Round(score)
	for _, b := range bands {
		if float64(b.Start) <= r && r <= float64(b.End) {
			return b, true
		}
	}
	return Band{}, false
}

// RubricRange returns the score range a rubric implies: the lowest start
// and the highest end of its bands, or DeepEval's default 0–10 when there
// are no bands.
func RubricRange(bands []Band) (min, max int) {
	if len(bands) == 0 {
		return RubricMin, RubricMax
	}
	min, max = bands[0].Start, bands[0].End
	for _, b := range bands[1:] {
		if b.Start < min {
			min = b.Start
		}
		if b.End > max {
			max = b.End
		}
	}
	return min, max
}
