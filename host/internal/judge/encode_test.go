package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// The hand-written request body and cache key (requestBody, cacheKey)
// against encoding/json of the reference structs (marshalRequest,
// marshalKey): the same bytes, the same errors.

// encodeInput is what a generated plan is made of.
type encodeInput struct {
	contents          [3]string
	roles             [3]string
	model, name       string
	field, numberToks string
	schema            []byte
	temp, sampleTemp  float64
	scoreTemp         float64
	flags             uint32
	ints              [4]int
}

// build makes the plan, the call and the mode in. flags choose what is
// set; ints are token counts, n, samples and the sample index, any sign.
func (in encodeInput) build() (*plan, call, schemaMode) {
	bit := func(i int) bool { return in.flags>>i&1 == 1 }
	p := &plan{}
	for i := range 1 + int(in.flags&3)%3 {
		p.req.Messages = append(p.req.Messages, abi.Message{Role: in.roles[i], Content: in.contents[i]})
	}
	if bit(2) {
		p.req.Messages = nil
	}
	if bit(3) {
		canonical := in.schema
		if bit(4) {
			if c, err := canonicalJSON(in.schema); err == nil {
				canonical = c
			}
		}
		p.schema = &compiledSchema{canonical: canonical}
		p.schemaName = in.name
		p.mode = []schemaMode{modeJSONSchema, modeJSONObject, modePrompt, ""}[in.flags>>5&3]
		p.strict = bit(7)
	}
	if bit(8) {
		t := in.temp
		p.temperature = &t
	}
	p.maxTokens, p.topLogprobs = in.ints[0], in.ints[1]
	p.returnTokens, p.omitTokens = bit(9), bit(10)
	if bit(11) {
		p.score = &abi.ScoreSpec{Min: in.ints[2], Max: in.ints[3], Field: in.field, Samples: in.ints[1] % 7}
		if bit(12) {
			t := in.scoreTemp
			p.score.SampleTemperature = &t
		}
	}
	if bit(13) {
		p.samples, p.sampleTemperature = in.ints[2]%9, in.sampleTemp
	}
	p.numberTokens = in.numberToks
	p.sample = in.ints[3] % 5
	c := call{n: in.ints[2] % 5}
	if bit(14) {
		c.temperature = &in.temp
	}
	if bit(15) {
		c.extra = []abi.Message{{Role: "assistant", Content: in.contents[2]}, {Role: in.roles[0], Content: repairInstruction(fmt.Errorf("bad %s", in.contents[1]))}}
	}
	mode := []schemaMode{modeJSONSchema, modeJSONObject, modePrompt}[int(in.flags>>16&3)%3]
	return p, c, mode
}

// checkEncoders requires requestBody and cacheKey to agree with
// encoding/json on in, for a plan with its wire text made by resolve and
// one without.
func checkEncoders(t *testing.T, in encodeInput) {
	t.Helper()
	p, c, mode := in.build()
	for _, made := range []bool{false, true} {
		p.wire = nil
		if made {
			p.wire = p.newWireText()
		}
		want, werr := p.marshalRequest(in.model, c, mode)
		got, gerr := p.requestBody(in.model, c, mode)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !bytes.Equal(got, want) {
			t.Fatalf("body of %+v (wire made %v):\ngot  %s (%v)\nwant %s (%v)", in, made, got, gerr, want, werr)
		}
		for _, omit := range []bool{false, true} {
			want, werr := p.marshalKey(in.model, omit)
			got, gerr := p.cacheKey(in.model, omit)
			if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				material, _ := json.Marshal(p.keyMaterial(in.model, omit))
				schema, _ := p.schemaForm()
				t.Fatalf("key of %+v: got %q (%v), want %q (%v)\nhand-written %s\njson.Marshal %s", in, got, gerr, want, werr,
					p.appendKeyMaterial(nil, schema, in.model, omit), material)
			}
		}
	}
}

// TestEncodersMatchMarshal runs checkEncoders on generated requests over
// every field, and the edge cases of strings, floats and schemas.
func TestEncodersMatchMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	strs := jsonStrings()
	str := func() string {
		if rng.IntN(4) == 0 {
			return ""
		}
		return strs[rng.IntN(len(strs))] + strs[rng.IntN(len(strs))]
	}
	floats := append(jsonFloats(), math.NaN(), math.Inf(1), math.Inf(-1))
	float := func() float64 { return floats[rng.IntN(len(floats))] }
	roles := []string{"system", "user", "assistant", "tool", "", "<&>"}
	ints := []int{0, 1, -1, 20, 512, math.MaxInt, math.MinInt}
	n := 20000
	if testing.Short() {
		n = 4000
	}
	for range n {
		in := encodeInput{model: str(), name: schemaName(str()), field: str(), numberToks: str(),
			schema: []byte(rawDocs[rng.IntN(len(rawDocs))]), flags: rng.Uint32()}
		if rng.IntN(8) == 0 {
			in.name = str()
		}
		// Non-finite floats are rare enough to leave most requests encodable.
		in.temp, in.sampleTemp, in.scoreTemp = float(), float(), float()
		for i := range in.contents {
			in.contents[i], in.roles[i] = str(), roles[rng.IntN(len(roles))]
		}
		for i := range in.ints {
			in.ints[i] = ints[rng.IntN(len(ints))]
		}
		checkEncoders(t, in)
	}
}

// TestCacheKeysUnchanged pins the keys of a G-Eval request as the
// encoding/json encoder made them before the hand-written one (computed
// at f5abdc0): a cache keeps its hits across the change.
func TestCacheKeysUnchanged(t *testing.T) {
	temp := 0.7
	p := &plan{req: gevalRequest(), temperature: &temp, maxTokens: 512, topLogprobs: 20, returnTokens: true,
		score: &abi.ScoreSpec{Min: 0, Max: 10, Field: "score"}, numberTokens: "digits", mode: modeJSONSchema, schemaName: "verdict"}
	canonical, err := canonicalJSON([]byte(verdictSchema))
	if err != nil {
		t.Fatal(err)
	}
	p.schema = &compiledSchema{canonical: canonical}
	for omit, want := range map[bool]string{
		false: "254059f933170e084c77791cfc7b48c9d10fbadef0f2a93bf7e9a3689a206b99",
		true:  "fa7673d32a1288119aa16c9b6eb6bcf7b0874476931fa605bf7bd7c356fc9ad0",
	} {
		if got, err := p.cacheKey("gpt-4o-mini", omit); err != nil || got != want {
			t.Errorf("omit %v: key %s (%v), was %s", omit, got, err, want)
		}
	}
}

func fuzzInput(c0, c1, c2, role, model string, schema []byte, temp, sampleTemp float64, flags uint32, a, b int) encodeInput {
	in := encodeInput{contents: [3]string{c0, c1, c2}, roles: [3]string{"system", role, "user"}, model: model,
		name: schemaName(c2), field: role, numberToks: c1, schema: schema, temp: temp, sampleTemp: sampleTemp,
		scoreTemp: -temp, flags: flags, ints: [4]int{a, b, a - b, b - a}}
	if flags>>20&1 == 1 {
		in.name = c2
	}
	return in
}

func addFuzzSeeds(f *testing.F) {
	f.Add("You are a strict grader.", "Grade <this> & that \u2028", "\xff\xc3", "user", "gpt-4o-mini",
		[]byte(`{"type":"object","properties":{"score":{"type":"integer"}}}`), 0.7, 1.0, uint32(0xffff), 512, 20)
	f.Add("", "\x00\b\f\n\r\t\x1f\x7f", "a\xe2\x80\xa8b", "", "", []byte(" { \"a<b\" : [1, -0, 1e21] } "), 1e21, math.Copysign(0, -1), uint32(0x3f9a5), -1, 0)
	f.Add("x", "y", "z", "tool", "m<&>", []byte(`{"a":`), math.NaN(), math.Inf(-1), uint32(0xfffff), 0, 3)
	f.Add(string(bytes.Repeat([]byte("word & <tag> "), 300)), "ünï 日本語 🙂", "\xed\xa0\x80", "assistant", "\u2029",
		[]byte(nil), 1e-7, 5e-324, uint32(0x1a5a5), 7, -7)
}

// FuzzWireBody and FuzzCacheKey: checkEncoders on requests from arbitrary
// contents (invalid UTF-8 included), roles, models, floats, schema bytes
// and flags choosing every field and mode.
func FuzzWireBody(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, c0, c1, c2, role, model string, schema []byte, temp, sampleTemp float64, flags uint32, a, b int) {
		in := fuzzInput(c0, c1, c2, role, model, schema, temp, sampleTemp, flags, a, b)
		in.flags |= 1 << 14 // the call's temperature
		checkEncoders(t, in)
	})
}

func FuzzCacheKey(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, c0, c1, c2, role, model string, schema []byte, temp, sampleTemp float64, flags uint32, a, b int) {
		in := fuzzInput(c0, c1, c2, role, model, schema, temp, sampleTemp, flags, a, b)
		in.flags |= 1<<8 | 1<<11 | 1<<13 // the key's floats
		checkEncoders(t, in)
	})
}
