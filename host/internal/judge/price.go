package judge

import (
	"fmt"

	"github.com/agentanvil/anvil/host/internal/judgeconfig"
	"github.com/agentanvil/anvil/host/internal/pricing"
)

// PriceInfo is where a judge's price comes from: its config's price:, the
// built-in price table's row for its provider and model, or nowhere (the
// model is unknown: no USD is counted for it, and Why says so).
type PriceInfo struct {
	// Known is false when the judge has no price.
	Known bool
	// Source is "config" or "table" when Known.
	Source string
	// Price is the rates in force (cached and cache-write rates filled in
	// from the input rate where not set).
	Price judgeconfig.Price
	// Row is the price table's row, when Source is "table".
	Row *pricing.Row
	// BatchDiscount is the table's batch discount for the judge's
	// provider (the fraction off every rate through its batch API), for
	// batch mode; 0 when the table has none.
	BatchDiscount float64
	// Why is the operator-facing reason a judge has no price.
	Why string
}

// resolvePrice decides a judge's price: its config's price: when it sets
// a rate, else its row in the built-in table.
func resolvePrice(cfg Config) PriceInfo {
	table, err := pricing.Builtin()
	var info PriceInfo
	if err == nil {
		if p, ok := table.Provider(string(cfg.Provider)); ok {
			info.BatchDiscount = p.BatchDiscount
		}
	}
	if cfg.Price.Set() {
		info.Known, info.Source, info.Price = true, "config", cfg.Price.WithDefaults()
		return info
	}
	if err != nil {
		info.Why = fmt.Sprintf("the built-in price table does not load (%v); set price: in the judge's config", err)
		return info
	}
	row, ok := table.Lookup(string(cfg.Provider), cfg.Model)
	if !ok {
		info.Why = fmt.Sprintf("model %q of provider %s is not in the built-in price table and the judge's config sets no price:, so its calls have no USD", cfg.Model, cfg.Provider)
		return info
	}
	info.Known, info.Source, info.Price, info.Row = true, "table", row.Price(), &row
	return info
}

// PriceInfo returns where the judge's price comes from.
func (j *Judge) PriceInfo() PriceInfo { return j.price }

// tokens is the token counts of one call or request: in includes cached
// (read from the provider's prompt cache) and written (written to it).
type tokens struct {
	in, cached, written, out int
}

func (t *tokens) add(o tokens) {
	t.in += o.in
	t.cached += o.cached
	t.written += o.written
	t.out += o.out
}

// cost is t's USD at the judge's price, each kind of input at its rate; 0
// when the judge has no price.
func (j *Judge) cost(t tokens) float64 {
	p := j.price.Price
	plain := max(t.in-t.cached-t.written, 0)
	return (float64(plain)*p.InputPerMillion + float64(t.cached)*p.CachedInputPerMillion +
		float64(t.written)*p.CacheWritePerMillion + float64(t.out)*p.OutputPerMillion) / 1e6
}

// Price is the USD of in input and out output tokens, none of them served
// from or written to a prompt cache: what `estimate` prices a request at.
// 0 when the judge has no price (PriceInfo().Known).
func (j *Judge) Price(in, out int) float64 { return j.cost(tokens{in: in, out: out}) }
