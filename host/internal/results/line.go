package results

import (
	"bytes"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The line format: a line of results.jsonl is one CaseResult without its
// Case, compact, as github.com/go-json-experiment/json encodes it;
// cases/<id>.json is the same value with its Case, indented.
//
// Reading takes every line earlier versions wrote (encoding/json's bytes,
// or the hand encoder's, which were the same): the member names, the
// numbers and the escapes are JSON's, and the fields a version omitted
// when zero read as zero.

// lineOptions encode and decode a results line and a case file. A
// plugin's text that is not valid UTF-8 is written with U+FFFD in its
// place, as encoding/json wrote it, rather than failing the write: a
// computed result is never lost for its bytes. A nil list or map is
// null, an empty one empty, so a result reads back as it was written.
// Names are matched exactly and a name twice in one object is an error
// (v2's defaults).
var lineOptions = json.JoinOptions(jsontext.AllowInvalidUTF8(true), json.Deterministic(true),
	json.FormatNilSliceAsNull(true), json.FormatNilMapAsNull(true))

// caseFileOptions lay a case file out for people: two-space indentation.
var caseFileOptions = json.JoinOptions(lineOptions, jsontext.WithIndent("  "))

// DecodeLine decodes one line of results.jsonl (without its newline), or
// a case file, into r, which it resets first. An error names the member at
// fault by its JSON pointer.
func DecodeLine(b []byte, r *CaseResult) error {
	*r = CaseResult{}
	return json.Unmarshal(b, r, lineOptions)
}

// Encode is r, its Case included, in the line format on one line (without
// the newline): a result held on disk by what is built from the results,
// to be read back with DecodeLine.
func Encode(r *CaseResult) ([]byte, error) { return json.Marshal(r, lineOptions) }

// lineEncoder encodes results lines and case files into buffers it
// reuses.
type lineEncoder struct {
	lines, file bytes.Buffer
	lineEnc     jsontext.Encoder
	fileEnc     jsontext.Encoder
}

// reset empties the lines buffer.
func (e *lineEncoder) reset() {
	e.lines.Reset()
	e.lineEnc.Reset(&e.lines, lineOptions)
}

// appendLine appends r's results line, with its newline, to the lines
// buffer; r.Case is not written.
func (e *lineEncoder) appendLine(r *CaseResult) error {
	line := *r
	line.Case = nil
	return json.MarshalEncode(&e.lineEnc, &line)
}

// caseFile is cases/<id>.json of r, valid until the next call.
func (e *lineEncoder) caseFile(r *CaseResult) ([]byte, error) {
	e.file.Reset()
	e.fileEnc.Reset(&e.file, caseFileOptions)
	if err := json.MarshalEncode(&e.fileEnc, r); err != nil {
		return nil, err
	}
	return e.file.Bytes(), nil
}
