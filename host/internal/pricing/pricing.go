// Package pricing is Anvil's built-in price table: USD per million tokens
// for each provider's models (input, input read from the provider's
// prompt cache, input written to it, output) and each provider's batch
// discount, every row with the page it comes from and the date it is known
// to hold (prices.json). A judge's own `price:` overrides its row; a model
// the table does not know, and no `price:`, has no price: its USD is not
// counted, and the run says so rather than report zero as a cost.
//
// Invariants: the table is data, checked whole when it is parsed (every
// rate finite and non-negative, every row sourced and dated, no model
// twice per provider); Lookup matches a model exactly or as a dated
// snapshot of a row (Lookup's rule), never by a looser prefix, so a
// model's price is never a different model's.
package pricing

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

//go:embed prices.json
var builtin []byte

// Row is one model's prices under one provider, USD per million tokens.
type Row struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	Input    float64 `json:"input"`
	// CachedInput is the price of input tokens the provider served from
	// its prompt cache; absent when the provider gives no discount for
	// them (they cost Input).
	CachedInput *float64 `json:"cached_input,omitempty"`
	// CacheWrite is the price of input tokens written to the cache
	// (Anthropic's cache_creation_input_tokens); absent when writing
	// costs Input.
	CacheWrite *float64 `json:"cache_write,omitempty"`
	Output     float64  `json:"output"`
	// Source is the page the price is read from; AsOf the date it is known
	// to hold (YYYY-MM-DD).
	Source string `json:"source"`
	AsOf   string `json:"as_of"`
}

// Price is the row as a judge's price: the cached and cache-write rates
// are Input where the row has none.
func (r Row) Price() judgeconfig.Price {
	p := judgeconfig.Price{InputPerMillion: r.Input, OutputPerMillion: r.Output,
		CachedInputPerMillion: r.Input, CacheWritePerMillion: r.Input}
	if r.CachedInput != nil {
		p.CachedInputPerMillion = *r.CachedInput
	}
	if r.CacheWrite != nil {
		p.CacheWritePerMillion = *r.CacheWrite
	}
	return p
}

// Provider is what the table says of a provider as a whole.
type Provider struct {
	Provider string `json:"provider"`
	// BatchDiscount is the fraction taken off every rate for requests
	// sent through the provider's batch API (0.5: half price); 0 when the
	// provider has none.
	BatchDiscount float64 `json:"batch_discount"`
	Source        string  `json:"source"`
	AsOf          string  `json:"as_of"`
}

// Table is a parsed price table.
type Table struct {
	providers map[string]Provider
	rows      map[string]map[string]Row // provider → lower-case model → row
}

type file struct {
	Providers []Provider `json:"providers"`
	Models    []Row      `json:"models"`
}

// Builtin parses the table Anvil carries. It cannot fail on a released
// binary (TestBuiltinTableParses); an error is returned, not panicked, so
// that a bad edit fails a test with the row it names.
func Builtin() (*Table, error) { return Parse(builtin) }

// Parse reads a price table (prices.json's format), strictly: an unknown
// member, a repeated name, a negative or missing rate, a row without a
// source URL or date, a model twice under a provider are errors naming the
// row.
func Parse(data []byte) (*Table, error) {
	var f file
	if err := json.Unmarshal(data, &f, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	t := &Table{providers: map[string]Provider{}, rows: map[string]map[string]Row{}}
	var errs []error
	for i, p := range f.Providers {
		where := fmt.Sprintf("price table: providers[%d] (%s)", i, p.Provider)
		if p.Provider == "" {
			errs = append(errs, fmt.Errorf("%s: provider is required", where))
		}
		if _, dup := t.providers[p.Provider]; dup {
			errs = append(errs, fmt.Errorf("%s: listed twice", where))
		}
		if !(p.BatchDiscount >= 0 && p.BatchDiscount < 1) {
			errs = append(errs, fmt.Errorf("%s: batch_discount %g is outside [0, 1)", where, p.BatchDiscount))
		}
		errs = append(errs, checkSource(where, p.Source, p.AsOf)...)
		t.providers[p.Provider] = p
	}
	for i, r := range f.Models {
		where := fmt.Sprintf("price table: models[%d] (%s %s)", i, r.Provider, r.Model)
		if r.Provider == "" || !modelName.MatchString(r.Model) {
			errs = append(errs, fmt.Errorf("%s: provider is required and model must be a lower-case model id (%s)", where, modelName))
		}
		if r.Provider == "bedrock" && bedrockRegion(r.Model) != "" {
			errs = append(errs, fmt.Errorf("%s: a Bedrock row names the model, not a region's inference profile", where))
		}
		if _, ok := t.providers[r.Provider]; !ok {
			errs = append(errs, fmt.Errorf("%s: provider %q is not in providers", where, r.Provider))
		}
		rates := map[string]*float64{"input": &r.Input, "output": &r.Output, "cached_input": r.CachedInput, "cache_write": r.CacheWrite}
		for name, v := range rates {
			if v != nil && !(*v >= 0 && !math.IsInf(*v, 0)) {
				errs = append(errs, fmt.Errorf("%s: %s %g must be a finite price >= 0", where, name, *v))
			}
		}
		if r.Input == 0 && r.Output == 0 {
			errs = append(errs, fmt.Errorf("%s: input and output are missing (a free model is not priced by the table)", where))
		}
		errs = append(errs, checkSource(where, r.Source, r.AsOf)...)
		key := strings.ToLower(r.Model)
		if t.rows[r.Provider] == nil {
			t.rows[r.Provider] = map[string]Row{}
		}
		if _, dup := t.rows[r.Provider][key]; dup {
			errs = append(errs, fmt.Errorf("%s: the model is listed twice for its provider", where))
		}
		t.rows[r.Provider][key] = r
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

func checkSource(where, source, asOf string) []error {
	var errs []error
	if u, err := url.Parse(source); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s: source %q is not an https URL", where, source))
	}
	if _, err := time.Parse(time.DateOnly, asOf); err != nil {
		errs = append(errs, fmt.Errorf("%s: as_of %q is not a date (YYYY-MM-DD)", where, asOf))
	}
	return errs
}

// Provider returns what the table says of provider as a whole.
func (t *Table) Provider(provider string) (Provider, bool) {
	p, ok := t.providers[provider]
	return p, ok
}

// snapshot is what may follow a row's model name in a model the row
// prices: a dated snapshot or an alias of the same model (-2024-08-06,
// -20250514, -0613, -001, -latest, -preview-05-20, -exp-1206), then
// Bedrock's version (-v1:0, -v2:0), at least one of the two. A name
// continuing otherwise (gpt-4o-mini after gpt-4o, claude-sonnet-4-5 after
// claude-sonnet-4) is another model.
var snapshot = regexp.MustCompile(`^(-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d{3}|latest|preview(-\d{2}-\d{2})?|exp(-\d{4})?))?(-v\d+(:\d+)?)?$`)

// modelName is what a row's model may be: Lookup lower-cases names and
// removes "models/" before matching, so a row in another form would never
// be found.
var modelName = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]*$`)

// bedrockRegions are the prefixes of Bedrock's cross-region inference
// profiles (us.anthropic.claude-…): the model is the rest.
var bedrockRegions = []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."}

// Lookup returns the row that prices model under provider. The rule,
// case-insensitive: a row whose model is the name exactly; otherwise the
// row whose model is the name less a snapshot suffix (see snapshot), the
// longest such row when several are. Before matching, a Gemini name's
// "models/" and a Bedrock name's region prefix ("us.", "eu.", "global.",
// …) are removed. A model served by another provider is not looked up
// under it: the same model costs what its host charges.
func (t *Table) Lookup(provider, model string) (Row, bool) {
	rows := t.rows[provider]
	if len(rows) == 0 {
		return Row{}, false
	}
	m := strings.ToLower(strings.TrimSpace(model))
	m = strings.TrimPrefix(m, "models/")
	if provider == "bedrock" {
		m = m[len(bedrockRegion(m)):]
	}
	if r, ok := rows[m]; ok {
		return r, true
	}
	var best Row
	found := false
	for key, r := range rows {
		rest, ok := strings.CutPrefix(m, key)
		if !ok || rest == "" || !snapshot.MatchString(rest) {
			continue
		}
		if !found || len(key) > len(best.Model) {
			best, found = r, true
		}
	}
	return best, found
}

// bedrockRegion is the region prefix of a Bedrock inference profile's id,
// or "".
func bedrockRegion(model string) string {
	for _, p := range bedrockRegions {
		if strings.HasPrefix(model, p) {
			return p
		}
	}
	return ""
}

// Rows returns the table's rows of provider ("" for all), in no
// particular order.
func (t *Table) Rows(provider string) []Row {
	var out []Row
	for p, rows := range t.rows {
		if provider != "" && p != provider {
			continue
		}
		for _, r := range rows {
			out = append(out, r)
		}
	}
	return out
}
