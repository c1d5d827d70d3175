package abi_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
)

// presenceTable is abi/v1/testdata/presence.json: when a list field
// (context, retrieval_context) is present. The C, AssemblyScript and
// Python SDKs' tests read the same file, so the four implementations are
// held to one table.
type presenceTable struct {
	About string `json:"about"`
	Rows  []struct {
		Name    string   `json:"name"`
		Items   []string `json:"items"`
		Present bool     `json:"present"`
	} `json:"rows"`
}

func readPresenceTable(t *testing.T) presenceTable {
	t.Helper()
	b, err := os.ReadFile("v1/testdata/presence.json")
	if err != nil {
		t.Fatal(err)
	}
	var table presenceTable
	if err := json.Unmarshal(b, &table, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("v1/testdata/presence.json: %v", err)
	}
	return table
}

// TestListPresenceTable: the host's side of the table. A list is present
// when an item has a character other than white space, whichever of the
// two list fields it is in, and the other field stays absent.
func TestListPresenceTable(t *testing.T) {
	t.Parallel()
	for _, row := range readPresenceTable(t).Rows {
		t.Run(row.Name, func(t *testing.T) {
			for _, field := range []string{abi.FieldContext, abi.FieldRetrievalContext} {
				c, other := abi.TestCase{ID: "c", Context: row.Items}, abi.FieldRetrievalContext
				if field == abi.FieldRetrievalContext {
					c, other = abi.TestCase{ID: "c", RetrievalContext: row.Items}, abi.FieldContext
				}
				if got := c.Has(field); got != row.Present {
					t.Errorf("%s %q: Has = %t, want %t", field, row.Items, got, row.Present)
				}
				if c.Has(other) {
					t.Errorf("%s %q: Has(%s) = true", field, row.Items, other)
				}
				if text, ok := c.Field(field); ok && text != strings.Join(row.Items, "\n") {
					t.Errorf("%s %q: Field = %q; want the items joined by \\n", field, row.Items, text)
				}
			}
		})
	}
}

// TestListPresenceTableComplete: every character unicode.IsSpace counts
// has a row of its own (a list of just that character, absent), so an SDK
// that passes the table has the host's white-space set, not a neighbour
// of it such as Python's str.isspace or JavaScript's trim.
func TestListPresenceTableComplete(t *testing.T) {
	t.Parallel()
	alone := map[rune]bool{}
	for _, row := range readPresenceTable(t).Rows {
		if len(row.Items) == 1 && utf8.RuneCountInString(row.Items[0]) == 1 {
			r, _ := utf8.DecodeRuneInString(row.Items[0])
			alone[r] = row.Present
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.IsSpace(r) {
			if present, ok := alone[r]; !ok || present {
				t.Errorf("U+%04X is white space: want a row [%q] with present false", r, string(r))
			}
		}
	}
}

// TestSpecListsWhiteSpace: the spec's list of white-space characters
// (abi/v1/README.md §8, the line starting "**White space**") is exactly
// unicode.IsSpace's set, so an author reading the spec writes the host's
// rule.
func TestSpecListsWhiteSpace(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("v1/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "**White space**")
	if !ok {
		t.Fatal("v1/README.md has no paragraph starting **White space**")
	}
	para, _, _ := strings.Cut(after, "\n\n")
	listed, _, _ := strings.Cut(para, ";") // what follows the list names characters that are not white space
	spec := map[rune]bool{}
	for _, m := range regexp.MustCompile(`U\+([0-9A-F]{4,6})(?:–U\+([0-9A-F]{4,6}))?`).FindAllStringSubmatch(listed, -1) {
		lo, _ := strconv.ParseUint(m[1], 16, 32)
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.ParseUint(m[2], 16, 32)
		}
		for r := lo; r <= hi; r++ {
			spec[rune(r)] = true
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if spec[r] != unicode.IsSpace(r) {
			t.Errorf("U+%04X: the spec's list says white space %t, unicode.IsSpace %t", r, spec[r], unicode.IsSpace(r))
		}
	}
}
