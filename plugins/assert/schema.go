package assert

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// JSONCorrectnessConfig configures json_correctness.
type JSONCorrectnessConfig struct {
	Schema     json.RawMessage `json:"schema" jsonschema:"required" jsonschema_description:"The JSON Schema actual_output must satisfy (draft 2020-12 unless its $schema names another draft). It is the whole schema: a $ref outside it (a file, a URL) is refused when the run starts, never fetched."`
	StrictMode bool            `json:"strict_mode,omitempty" jsonschema_description:"As DeepEval: the threshold is forced to 1 (the score is 0 or 1 already)."`
}

// schemaLocation is the URL a params schema is compiled under: in no
// scheme anything can open, so a relative $ref cannot reach a file.
const schemaLocation = "mem://anvil/assert/json_correctness/schema.json"

// maxSchemaErrors bounds the validation errors a result lists.
const maxSchemaErrors = 20

// SchemaError is one way actual_output fails the schema.
type SchemaError struct {
	// InstanceLocation is the JSON pointer of the failing value ("" the whole).
	InstanceLocation string `json:"instance_location"`
	// KeywordLocation is the schema keyword that failed, as a JSON pointer.
	KeywordLocation string `json:"keyword_location"`
	Message         string `json:"message"`
}

// SchemaDetails are MeasureResult.Details of json_correctness.
type SchemaDetails struct {
	Kind string `json:"kind"`
	// ParseError is set when actual_output is not JSON (or is ambiguous:
	// a repeated member name, invalid UTF-8).
	ParseError string `json:"parse_error,omitempty"`
	// Errors are the schema violations, at most 20 (Truncated: there were more).
	Errors    []SchemaError `json:"errors,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
}

// compileSchema compiles a params schema with no loader: only the draft
// meta-schemas the library embeds resolve; any other reference is an
// error, never a file read or a fetch.
func compileSchema(raw string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("is not JSON: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("is not a JSON Schema (an object or a boolean)")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaLocation, doc); err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	s, err := c.Compile(schemaLocation)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	return s, nil
}

// noLoader refuses every reference outside the schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference to %q outside the schema: the schema must be self-contained, nothing is loaded", url)
}

// JSONCorrectnessKind returns the json_correctness metric kind.
func JSONCorrectnessKind() *sdk.MetricKind[JSONCorrectnessConfig] {
	var cache compiled[*jsonschema.Schema]
	compile := func(c *JSONCorrectnessConfig) (*jsonschema.Schema, error) {
		raw := strings.TrimSpace(string(c.Schema))
		if raw == "" || raw == "null" {
			return nil, invalid("schema", "is required: the JSON Schema actual_output must satisfy")
		}
		return cache.get(raw, func(raw string) (*jsonschema.Schema, error) {
			s, err := compileSchema(raw)
			if err != nil {
				return nil, invalid("schema", err.Error())
			}
			return s, nil
		})
	}
	return &sdk.MetricKind[JSONCorrectnessConfig]{
		Name:           KindJSONCorrectness,
		Description:    "1 when actual_output is JSON that satisfies the JSON Schema in params.schema, else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Validate: func(c *JSONCorrectnessConfig) error {
			_, err := compile(c)
			return err
		},
		Prepare: checkOnly[JSONCorrectnessConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *JSONCorrectnessConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			s, err := compile(c)
			if err != nil {
				return nil, err
			}
			d := SchemaDetails{Kind: KindJSONCorrectness}
			text := req.Case.ActualOutput
			// Strict first: a repeated member name or invalid UTF-8 leaves
			// what the schema would judge ambiguous (encoding/json, below,
			// would keep the last value silently).
			if err := jsonv2.Unmarshal([]byte(text), new(jsontext.Value)); err != nil {
				d.ParseError = err.Error()
				return result(req, 0, c.StrictMode, "actual_output is not valid JSON: "+d.ParseError, d)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
			if err != nil {
				d.ParseError = err.Error()
				return result(req, 0, c.StrictMode, "actual_output is not valid JSON: "+d.ParseError, d)
			}
			verr := s.Validate(inst)
			if verr == nil {
				return result(req, 1, c.StrictMode, "actual_output satisfies the schema", nil)
			}
			var ve *jsonschema.ValidationError
			if !errors.As(verr, &ve) {
				return nil, abi.Errorf(abi.CodeMetric, "json_correctness: validating actual_output: %v", verr)
			}
			d.Errors, d.Truncated = schemaErrors(ve)
			return result(req, 0, c.StrictMode, schemaReason(d), d)
		},
	}
}

// schemaErrors lists the leaves of a validation error — the keywords
// that failed, not the subschemas holding them — sorted by instance
// location, keyword location and message (the library visits an
// object's properties in map order, which varies from run to run), at
// most maxSchemaErrors of them.
func schemaErrors(ve *jsonschema.ValidationError) (out []SchemaError, truncated bool) {
	p := message.NewPrinter(language.English)
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) > 0 {
			return
		}
		kw := ""
		if _, frag, ok := strings.Cut(e.SchemaURL, "#"); ok {
			kw = frag
		}
		out = append(out, SchemaError{
			InstanceLocation: pointer(e.InstanceLocation),
			KeywordLocation:  kw + pointer(e.ErrorKind.KeywordPath()),
			Message:          e.ErrorKind.LocalizedString(p),
		})
	}
	walk(ve)
	slices.SortFunc(out, func(a, b SchemaError) int {
		return cmp.Or(strings.Compare(a.InstanceLocation, b.InstanceLocation),
			strings.Compare(a.KeywordLocation, b.KeywordLocation), strings.Compare(a.Message, b.Message))
	})
	if len(out) > maxSchemaErrors {
		return out[:maxSchemaErrors], true
	}
	return out, false
}

// pointer writes tokens as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func schemaReason(d SchemaDetails) string {
	var b strings.Builder
	b.WriteString("actual_output does not satisfy the schema:")
	for i, e := range d.Errors {
		if i == 3 {
			fmt.Fprintf(&b, " (and %d more in details)", len(d.Errors)-3)
			break
		}
		loc := e.InstanceLocation
		if loc == "" {
			loc = "(root)"
		}
		fmt.Fprintf(&b, " at %s: %s;", loc, e.Message)
	}
	return strings.TrimSuffix(b.String(), ";")
}
