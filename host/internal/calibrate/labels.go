package calibrate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// Label is one human judgement of one metric on one case: a line of the
// labels file.
//
//	{"case_id": "q1", "metric": "correctness", "rater": "ana", "score": 4, "pass": true}
//
// case_id and metric are required; rater is optional (one rater when
// absent); at least one of score (any numeric scale: correlations do not
// care which) and pass is required.
type Label struct {
	CaseID string
	Metric string
	Rater  string
	Score  *float64
	Pass   *bool
	// Line is the label's line in its file, for messages.
	Line int
}

// maxLabelErrors bounds the problems reported for one file: the first
// ones say what is wrong; a thousand more say nothing new.
const maxLabelErrors = 20

var labelFields = []string{"case_id", "metric", "rater", "score", "pass"}

// ReadLabels reads a labels file (JSONL; blank lines and lines starting
// with '#' are skipped) and checks each line: unknown keys, wrong types,
// missing fields and a second label by the same rater for the same case and
// metric are errors naming path:line and the field. All problems found
// (up to 20) are returned together.
func ReadLabels(path string) ([]Label, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	return ParseLabels(path, data)
}

// ParseLabels is ReadLabels on the file's contents; path is for messages.
func ParseLabels(path string, data []byte) ([]Label, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var (
		labels []Label
		errs   []error
		seen   = map[[3]string]int{}
	)
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...)))
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan() && len(errs) < maxLabelErrors; line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		l, problems := parseLabel(text)
		for _, p := range problems {
			bad(line, "%s", p)
		}
		if len(problems) > 0 {
			continue
		}
		l.Line = line
		key := [3]string{l.CaseID, l.Metric, l.Rater}
		if first, dup := seen[key]; dup {
			who := fmt.Sprintf("rater %q", l.Rater)
			if l.Rater == "" {
				who = "no rater"
			}
			bad(line, "case_id %q, metric %q, %s: labelled twice (first at line %d); give each rater's label a distinct \"rater\"", l.CaseID, l.Metric, who, first)
			continue
		}
		seen[key] = line
		labels = append(labels, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("labels %s: %w", path, err)
	}
	if len(errs) == maxLabelErrors {
		errs = append(errs, fmt.Errorf("%s: stopped after %d problems", path, maxLabelErrors))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("%s: no labels (want one JSON object per line: {\"case_id\": …, \"metric\": …, \"score\": … or \"pass\": …})", path)
	}
	return labels, nil
}

// parseLabel decodes one line field by field, so that each problem names
// its field.
func parseLabel(text []byte) (Label, []string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil {
		return Label{}, []string{fmt.Sprintf("not a JSON object: %v", err)}
	}
	var l Label
	var problems []string
	for k := range fields {
		if !slices.Contains(labelFields, k) {
			problems = append(problems, fmt.Sprintf("field %q: unknown (want %s)", k, strings.Join(labelFields, ", ")))
		}
	}
	slices.Sort(problems)
	str := func(name string, required bool) string {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			if required {
				problems = append(problems, fmt.Sprintf("field %q: required", name))
			}
			return ""
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			problems = append(problems, fmt.Sprintf("field %q: want a string, got %s", name, shorten(raw)))
			return ""
		}
		if required && strings.TrimSpace(s) == "" {
			problems = append(problems, fmt.Sprintf("field %q: empty", name))
		}
		return s
	}
	l.CaseID = str("case_id", true)
	l.Metric = str("metric", true)
	l.Rater = str("rater", false)
	given := 0
	if raw, ok := fields["score"]; ok && string(raw) != "null" {
		given++
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			problems = append(problems, fmt.Sprintf("field \"score\": want a number, got %s", shorten(raw)))
		} else {
			l.Score = &v
		}
	}
	if raw, ok := fields["pass"]; ok && string(raw) != "null" {
		given++
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			problems = append(problems, fmt.Sprintf("field \"pass\": want true or false, got %s", shorten(raw)))
		} else {
			l.Pass = &v
		}
	}
	if given == 0 {
		problems = append(problems, `fields "score" and "pass": give at least one`)
	}
	return l, problems
}

func shorten(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// CheckLabels reports every label whose metric is not one of metrics or
// whose case is not in cases (casesFrom names where the case ids come from,
// for the message), as path:line: field errors.
func CheckLabels(path string, labels []Label, metrics []string, cases map[string]bool, casesFrom string) error {
	var errs []error
	for _, l := range labels {
		if len(errs) == maxLabelErrors {
			errs = append(errs, fmt.Errorf("%s: stopped after %d problems", path, maxLabelErrors))
			break
		}
		if !slices.Contains(metrics, l.Metric) {
			errs = append(errs, fmt.Errorf("%s:%d: field \"metric\": unknown metric %q (the config has %s)", path, l.Line, l.Metric, strings.Join(metrics, ", ")))
		}
		if !cases[l.CaseID] {
			errs = append(errs, fmt.Errorf("%s:%d: field \"case_id\": unknown case %q (not in %s)", path, l.Line, l.CaseID, casesFrom))
		}
	}
	return errors.Join(errs...)
}
