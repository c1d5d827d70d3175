package abi_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// fullCase has every standard field and a spread of free-form fields.
func fullCase() abi.TestCase {
	return abi.TestCase{
		ID:               "c1",
		Input:            "What is the refund window?",
		ActualOutput:     "30 days.",
		ExpectedOutput:   "Thirty days.",
		Context:          []string{"Refunds: 30 days.", "Exchanges: 90 days."},
		RetrievalContext: []string{"Refunds within 30 days."},
		ToolsCalled: []abi.ToolCall{
			{Name: "lookup_order", Arguments: raw(`{"id":"o-1"}`), Output: raw(`{"status":"ok"}`)},
			{Name: "create_refund"},
		},
		ExpectedTools: []abi.ToolCall{{Name: "lookup_order"}},
		Extra: map[string]json.RawMessage{
			"tier":       raw(`"gold"`),
			"empty_str":  raw(`""`),
			"nothing":    raw(`null`),
			"zero_bytes": raw(``),
			"attempts":   raw(`3`),
			"turns":      raw(`"shadowed too"`),
			"flag":       raw(`false`),
			"meta":       raw(`{"channel":"chat","tags":["a","b"]}`),
			"list":       raw(`["x","y"]`),
			"empty_list": raw(`[]`),
			"unicode":    raw(`"caf\u00e9 \"quoted\""`),
			"input":      raw(`"shadowed"`),
		},
	}
}

// convCase is a conversational case with every conversational field.
func convCase() abi.TestCase {
	return abi.TestCase{
		ID: "conv",
		Turns: []abi.Turn{
			{Role: abi.RoleUser, Content: "Is <b> & ok?"},
			{Role: abi.RoleAssistant, Content: "Yes.", ToolsCalled: []abi.ToolCall{{Name: "check", Arguments: raw(`{"q":"b"}`)}},
				RetrievalContext: []string{"b is fine"}},
		},
		Scenario:        "Asks about tags.",
		ExpectedOutcome: "Learns b is fine.",
		ChatbotRole:     "A helpful HTML tutor.",
	}
}

func TestTestCaseField(t *testing.T) {
	t.Parallel()
	full := fullCase()
	conv := convCase()
	empty := abi.TestCase{
		ID:               "c2",
		Context:          []string{},
		RetrievalContext: nil,
		ToolsCalled:      []abi.ToolCall{},
		Extra:            map[string]json.RawMessage{"input": raw(`"only in extra"`)},
	}
	tests := []struct {
		name   string
		c      abi.TestCase
		field  string
		want   string
		wantOK bool
	}{
		{"input", full, abi.FieldInput, "What is the refund window?", true},
		{"actual output", full, abi.FieldActualOutput, "30 days.", true},
		{"expected output", full, abi.FieldExpectedOutput, "Thirty days.", true},
		{"context is one item a line", full, abi.FieldContext, "Refunds: 30 days.\nExchanges: 90 days.", true},
		{"retrieval context single item", full, abi.FieldRetrievalContext, "Refunds within 30 days.", true},
		{"tools called as compact JSON", full, abi.FieldToolsCalled,
			`[{"name":"lookup_order","arguments":{"id":"o-1"},"output":{"status":"ok"}},{"name":"create_refund"}]`, true},
		{"expected tools", full, abi.FieldExpectedTools, `[{"name":"lookup_order"}]`, true},
		{"extra string renders unquoted", full, "tier", "gold", true},
		{"extra string with escapes is decoded", full, "unicode", `café "quoted"`, true},
		{"extra number as JSON", full, "attempts", "3", true},
		{"turns never falls back to extra (minor 4)", full, abi.FieldTurns, "", false},
		{"turns as compact JSON, no HTML escaping", conv, abi.FieldTurns,
			`[{"role":"user","content":"Is <b> & ok?"},{"role":"assistant","content":"Yes.","tools_called":[{"name":"check","arguments":{"q":"b"}}],"retrieval_context":["b is fine"]}]`, true},
		{"scenario", conv, abi.FieldScenario, "Asks about tags.", true},
		{"expected outcome", conv, abi.FieldExpectedOutcome, "Learns b is fine.", true},
		{"chatbot role", conv, abi.FieldChatbotRole, "A helpful HTML tutor.", true},
		{"empty scenario is absent", full, abi.FieldScenario, "", false},
		{"last user turn", conv, abi.FieldLastUserTurn, "Is <b> & ok?", true},
		{"last assistant turn", conv, abi.FieldLastAssistantTurn, "Yes.", true},
		{"last assistant turn skips one with tools only", abi.TestCase{Turns: []abi.Turn{{Role: "assistant", Content: "A"}, {Role: "user", Content: "B"}, {Role: "assistant", ToolsCalled: []abi.ToolCall{{Name: "t"}}}}}, abi.FieldLastAssistantTurn, "A", true},
		{"no assistant turn", abi.TestCase{Turns: []abi.Turn{{Role: "user", Content: "B"}}}, abi.FieldLastAssistantTurn, "", false},
		{"last turns of a single-turn case are absent", full, abi.FieldLastUserTurn, "", false},
		{"empty turns are absent", abi.TestCase{Turns: []abi.Turn{}}, abi.FieldTurns, "", false},
		{"a turn of tools only writes its empty content", abi.TestCase{Turns: []abi.Turn{{Role: "assistant", ToolsCalled: []abi.ToolCall{{Name: "t"}}}}},
			abi.FieldTurns, `[{"role":"assistant","content":"","tools_called":[{"name":"t"}]}]`, true},
		{"extra false is a value", full, "flag", "false", true},
		{"extra object as JSON", full, "meta", `{"channel":"chat","tags":["a","b"]}`, true},
		{"extra list as JSON", full, "list", `["x","y"]`, true},
		{"extra empty list is a value", full, "empty_list", `[]`, true},
		{"extra empty string is absent", full, "empty_str", "", false},
		{"extra null is absent", full, "nothing", "", false},
		{"extra zero bytes is absent", full, "zero_bytes", "", false},
		{"unknown field is absent", full, "no_such_field", "", false},
		{"standard field never falls back to extra", full, abi.FieldInput, "What is the refund window?", true},
		{"empty standard string is absent", empty, abi.FieldInput, "", false},
		{"empty standard string ignores extra of that name", empty, abi.FieldInput, "", false},
		{"empty list is absent", empty, abi.FieldContext, "", false},
		{"nil list is absent", empty, abi.FieldRetrievalContext, "", false},
		{"empty tool calls are absent", empty, abi.FieldToolsCalled, "", false},
		{"nil tool calls are absent", empty, abi.FieldExpectedTools, "", false},
		{"nil extra map", abi.TestCase{}, "tier", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.c.Field(tt.field)
			if !ok && isToolsField(tt.field) {
				got = "" // see TestKnownIssueAbsentToolsText
			}
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Field(%q) = %q, %v; want %q, %v", tt.field, got, ok, tt.want, tt.wantOK)
			}
			if has := tt.c.Has(tt.field); has != tt.wantOK {
				t.Errorf("Has(%q) = %v, want %v", tt.field, has, tt.wantOK)
			}
		})
	}
}

func TestTestCaseMissing(t *testing.T) {
	t.Parallel()
	full := fullCase()
	sparse := abi.TestCase{ID: "s", Input: "hi", Extra: map[string]json.RawMessage{"tier": raw(`"gold"`)}}
	tests := []struct {
		name string
		c    abi.TestCase
		want []string
		need []string
	}{
		{"nothing wanted", full, nil, nil},
		{"empty want", full, nil, []string{}},
		{"all single-turn standard present", full, nil, abi.StandardFields[:7]},
		{"all conversational standard present", convCase(), nil, abi.StandardFields[7:]},
		{"a single-turn case lacks the conversational fields", full, abi.StandardFields[7:], abi.StandardFields[7:]},
		{"extra fields count", full, nil, []string{"tier", "meta"}},
		{"absent extras reported", full, []string{"empty_str", "nothing", "nope"}, []string{"tier", "empty_str", "nothing", "nope"}},
		{"order of want is kept", sparse,
			[]string{abi.FieldRetrievalContext, abi.FieldActualOutput, "locale"},
			[]string{abi.FieldRetrievalContext, abi.FieldInput, abi.FieldActualOutput, "tier", "locale"}},
		{"duplicates are reported each time", sparse,
			[]string{abi.FieldContext, abi.FieldContext},
			[]string{abi.FieldContext, abi.FieldContext}},
		{"all standard missing", abi.TestCase{ID: "e"}, abi.StandardFields, abi.StandardFields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.Missing(tt.need)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Missing(%q) = %#v, want %#v", tt.need, got, tt.want)
			}
		})
	}
}

func TestFieldTitle(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{abi.FieldInput, "Input"},
		{abi.FieldActualOutput, "Actual Output"},
		{abi.FieldExpectedOutput, "Expected Output"},
		{abi.FieldContext, "Context"},
		{abi.FieldRetrievalContext, "Retrieval Context"},
		{abi.FieldToolsCalled, "Tools Called"},
		{abi.FieldExpectedTools, "Expected Tools"},
		{"customer_tier", "Customer Tier"},
		{"already_Titled", "Already Titled"},
		{"ALL_CAPS", "ALL CAPS"},
		{"x1_y2", "X1 Y2"},
		{"9lives", "9lives"},
		{"camelCase", "CamelCase"},
		{"with space", "With space"},
		{"", ""},
		{"_", " "},
		{"a__b", "A  B"},
		{"_leading", " Leading"},
		{"trailing_", "Trailing "},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := abi.FieldTitle(tt.in); got != tt.want {
				t.Errorf("FieldTitle(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStandardFieldsMatchTestCaseTags(t *testing.T) {
	t.Parallel()
	// StandardFields, the Field* constants and the JSON names of TestCase's
	// fields are one list: a guest names a field the way the dataset does.
	var tags []string
	for f := range reflect.TypeFor[abi.TestCase]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "id" && name != "extra" {
			tags = append(tags, name)
		}
	}
	if !reflect.DeepEqual(tags, abi.StandardFields) {
		t.Errorf("TestCase JSON fields %q, StandardFields %q", tags, abi.StandardFields)
	}
}

func TestDescriptorKind(t *testing.T) {
	t.Parallel()
	d := &abi.Descriptor{
		Name: "p", Version: "1.0.0", ABIMajor: abi.Major,
		Kinds: []abi.KindDescriptor{
			{Name: "geval", Role: abi.RoleMetric, Prepare: true},
			{Name: "json_valid", Role: abi.RoleNode, Verdicts: []string{"false", "true"}},
			{Name: "geval", Role: abi.RoleNode, Description: "duplicate name: first wins"},
		},
	}
	tests := []struct {
		name   string
		d      *abi.Descriptor
		kind   string
		want   abi.KindDescriptor
		wantOK bool
	}{
		{"metric kind", d, "geval", d.Kinds[0], true},
		{"node kind", d, "json_valid", d.Kinds[1], true},
		{"unknown kind", d, "faithfulness", abi.KindDescriptor{}, false},
		{"empty name", d, "", abi.KindDescriptor{}, false},
		{"case sensitive", d, "GEval", abi.KindDescriptor{}, false},
		{"no kinds", &abi.Descriptor{}, "geval", abi.KindDescriptor{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.d.Kind(tt.kind)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Kind(%q) = %+v, %v; want %+v, %v", tt.kind, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestDescriptorAsks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		caps []abi.Capability
		ask  abi.Capability
		want bool
	}{
		{"asks judge", []abi.Capability{abi.CapJudge}, abi.CapJudge, true},
		{"asks judge among unknown", []abi.Capability{"telemetry", abi.CapJudge}, abi.CapJudge, true},
		{"asks nothing", nil, abi.CapJudge, false},
		{"asks something else", []abi.Capability{"telemetry"}, abi.CapJudge, false},
		{"case sensitive", []abi.Capability{"Judge"}, abi.CapJudge, false},
		{"unknown capability asked", []abi.Capability{"telemetry"}, "telemetry", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &abi.Descriptor{Capabilities: tt.caps}
			if got := d.Asks(tt.ask); got != tt.want {
				t.Errorf("Asks(%q) with %q = %v, want %v", tt.ask, tt.caps, got, tt.want)
			}
		})
	}
}

func TestErrorError(t *testing.T) {
	t.Parallel()
	const digest = "sha256:9f2c4e1ab07d5c3e8a6b1f0d2e4c6a8b0d1f3e5a7c9b2d4f6e8a0c1e3b5d7f9a"
	tests := []struct {
		name string
		err  *abi.Error
		want string
	}{
		{"code and message", &abi.Error{Code: abi.CodeMetric, Message: "no score in reply"},
			"metric_error: no score in reply"},
		{"field is not part of the text", &abi.Error{Code: abi.CodeMissingField, Message: "case has no context", Field: "context"},
			"missing_field: case has no context"},
		{"retryable is not part of the text", &abi.Error{Code: abi.CodeJudge, Message: "429", Retryable: true},
			"judge_error: 429"},
		{"plugin with sha256 digest shortened to 12 hex", &abi.Error{Code: abi.CodeTimeout, Message: "deadline 2m0s passed", Plugin: "geval@1.0.0", Digest: digest},
			"plugin geval@1.0.0@sha256:9f2c4e1ab07d: timeout: deadline 2m0s passed"},
		{"short digest kept whole", &abi.Error{Code: abi.CodeTrap, Message: "unreachable", Plugin: "geval@1.0.0", Digest: "inproc:geval@1"},
			"plugin geval@1.0.0@inproc:geval@1: trap: unreachable"},
		{"digest without plugin is not shown", &abi.Error{Code: abi.CodeTrap, Message: "unreachable", Digest: digest},
			"trap: unreachable"},
		{"stderr appended", &abi.Error{Code: abi.CodeTrap, Message: "wasm error: unreachable", Plugin: "geval@1.0.0", Digest: digest,
			Stderr: "panic: boom\ngoroutine 1 [running]:"},
			"plugin geval@1.0.0@sha256:9f2c4e1ab07d: trap: wasm error: unreachable\nguest stderr:\npanic: boom\ngoroutine 1 [running]:"},
		{"stderr without plugin", &abi.Error{Code: abi.CodeTrap, Message: "oom", Stderr: "fatal error: out of memory"},
			"trap: oom\nguest stderr:\nfatal error: out of memory"},
		{"empty error", &abi.Error{}, ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestErrorf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code abi.Code
		fmt  string
		args []any
		want abi.Error
	}{
		{abi.CodeBudget, "judge-call budget: %d used + %d asked > max_judge_calls %d", []any{60, 8, 64},
			abi.Error{Code: abi.CodeBudget, Message: "judge-call budget: 60 used + 8 asked > max_judge_calls 64"}},
		{abi.CodeABI, "plugin %s has no kind %q", []any{"p", "x"},
			abi.Error{Code: abi.CodeABI, Message: `plugin p has no kind "x"`}},
		{abi.CodeMetric, "100%", nil, abi.Error{Code: abi.CodeMetric, Message: "100%!(NOVERB)"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			got := abi.Errorf(tt.code, tt.fmt, tt.args...)
			if *got != tt.want {
				t.Errorf("Errorf = %+v, want %+v", *got, tt.want)
			}
			var err error = got // *Error is an error
			if err.Error() != string(tt.want.Code)+": "+tt.want.Message {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestVersionNames(t *testing.T) {
	t.Parallel()
	if want := abi.MarkerPrefix + strconv.Itoa(abi.Major); abi.ExportMarker != want {
		t.Errorf("ExportMarker = %q, want %q (major in names)", abi.ExportMarker, want)
	}
	if abi.HostNamespace != "extism:host/user" {
		t.Errorf("HostNamespace = %q: guests link against extism:host/user", abi.HostNamespace)
	}
}

func TestCodesAreDistinct(t *testing.T) {
	t.Parallel()
	seen := map[abi.Code]bool{}
	for _, c := range allCodes {
		if c == "" || seen[c] {
			t.Errorf("code %q is empty or repeated", c)
		}
		seen[c] = true
	}
}

// Known issues in package abi, found while writing the specification. Each
// test asserts the behaviour the spec (abi/v1/README.md) wants and is
// skipped until the fix lands; remove the skip with the fix.

func TestKnownIssueFieldTitleNonASCII(t *testing.T) {
	t.Parallel()
	if got, want := abi.FieldTitle("élan_vital"), "Élan Vital"; got != want {
		t.Errorf("FieldTitle = %q, want %q", got, want)
	}
}

func TestKnownIssueExtraFieldNotCompact(t *testing.T) {
	t.Parallel()
	c := abi.TestCase{Extra: map[string]json.RawMessage{"meta": raw(`{ "a": 1 }`)}}
	if got, _ := c.Field("meta"); got != `{"a":1}` {
		t.Errorf("Field(meta) = %q, want compact JSON", got)
	}
}

func TestKnownIssueToolsTextHTMLEscaped(t *testing.T) {
	t.Parallel()
	c := abi.TestCase{ToolsCalled: []abi.ToolCall{{Name: "search", Arguments: raw(`{"q":"a<b & c>d"}`)}}}
	if got, _ := c.Field(abi.FieldToolsCalled); got != `[{"name":"search","arguments":{"q":"a<b & c>d"}}]` {
		t.Errorf("Field(tools_called) = %q", got)
	}
}

func TestKnownIssueAbsentToolsText(t *testing.T) {
	t.Parallel()
	var c abi.TestCase
	for _, f := range []string{abi.FieldToolsCalled, abi.FieldExpectedTools} {
		if got, ok := c.Field(f); ok || got != "" {
			t.Errorf("Field(%q) = %q, %v; want \"\", false", f, got, ok)
		}
	}
}

func isToolsField(f string) bool { return f == abi.FieldToolsCalled || f == abi.FieldExpectedTools }

func TestKnownIssueErrorWithoutDigest(t *testing.T) {
	t.Parallel()
	e := &abi.Error{Code: abi.CodeMetric, Message: "m", Plugin: "geval@1.0.0"}
	if got := e.Error(); strings.Contains(got, "1.0.0@:") {
		t.Errorf("Error() = %q", got)
	}
}
