package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
)

// maxFieldTypo is the largest edit distance at which a field name that is
// not a standard one is taken for a misspelling of one. Farther names are
// free-form fields (TestCase.Extra), which G-Eval's evaluation_params may
// name; "expected_outptu" is 1 edit (a transposition) from
// expected_output, "retreival_context" 1 from retrieval_context.
const maxFieldTypo = 2

// checkFields checks the test-case fields a metric names — its kind's
// RequiredFields and its params' evaluation_params (the one params key
// the ABI gives to case fields) — against the standard field names. A
// misspelt one would make every case be skipped for the metric after the
// judge was paid for the rest, so it is a config error, found before any
// judge call.
func checkFields(file string, line int, metric, kind string, params *yaml.Node, paramsJSON []byte, required []string) error {
	for _, f := range required {
		if near, ok := misspelt(f); ok {
			return fmt.Errorf("%s:%d: metric %s: kind %s requires case field %q, which is not a test-case field: did you mean %s?", file, line, metric, kind, f, near)
		}
	}
	var p struct {
		EvaluationParams []string `json:"evaluation_params"`
	}
	if json.Unmarshal(paramsJSON, &p) != nil {
		return nil // not a list of names: the kind's schema says so
	}
	for i, f := range p.EvaluationParams {
		near, ok := misspelt(f)
		if !ok {
			continue
		}
		at := params.Line
		if n := lookup(params, []string{"evaluation_params", strconv.Itoa(i)}); n != nil {
			at = n.Line
		}
		if at == 0 {
			at = line
		}
		return fmt.Errorf("%s:%d: metric %s: evaluation_params: %q is not a test-case field: did you mean %s? (fields: %v)",
			file, at, metric, f, near, slices.Concat(abi.StandardFields, abi.DerivedFields))
	}
	return nil
}

// misspelt reports whether name is not a standard field but within
// maxFieldTypo edits of one, and the nearest such.
func misspelt(name string) (nearest string, ok bool) {
	best := maxFieldTypo + 1
	for _, f := range slices.Concat(abi.StandardFields, abi.DerivedFields) {
		if f == name {
			return "", false
		}
		if d := config.EditDistance(name, f); d < best {
			best, nearest = d, f
		}
	}
	return nearest, best <= maxFieldTypo
}
