package llm

import (
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
)

// Price is what a model costs, in US dollars per million tokens. Prompt
// tokens read from or written to the provider's prompt cache cost
// CacheReadPerMTok and CacheWritePerMTok when they are set, else the
// prompt price times the provider type's usual share (cacheShares).
type Price struct {
	PromptPerMTok     float64  `json:"promptPerMTok"`
	CompletionPerMTok float64  `json:"completionPerMTok"`
	CacheReadPerMTok  *float64 `json:"cacheReadPerMTok,omitempty"`
	CacheWritePerMTok *float64 `json:"cacheWritePerMTok,omitempty"`
}

// cacheShares are a cached prompt token's price as a share of an uncached
// one, read and written, by provider type: Anthropic bills reads at a
// tenth and writes (of its 5-minute cache) at 1.25 times; OpenAI bills
// cached input at half (what its prompt caching announced; newer models
// discount more: set cacheReadPerMTok for them) and writes at nothing
// extra.
var cacheShares = map[string][2]float64{
	TypeAnthropic:        {0.1, 1.25},
	TypeOpenAI:           {0.5, 1},
	TypeOpenAICompatible: {0.5, 1},
}

// PriceTable maps a model id to its price; the user edits it in Settings.
// A key may end in "*" to match every model id with that prefix.
type PriceTable map[string]Price

// Lookup returns the price of a model: an exact entry, else the longest
// matching prefix entry.
func (t PriceTable) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := "", false
	var price Price
	for k, p := range t {
		if prefix, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(model, prefix) && len(prefix) >= len(best) {
			best, price, found = prefix, p, true
		}
	}
	return price, found
}

// Cost estimates what usage of model, of a provider of type typ, cost;
// known says whether the table has a price for it.
func (t PriceTable) Cost(typ, model string, u Usage) (usd float64, known bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	share, ok := cacheShares[typ]
	if !ok {
		share = cacheShares[TypeOpenAICompatible]
	}
	read, write := p.PromptPerMTok*share[0], p.PromptPerMTok*share[1]
	if p.CacheReadPerMTok != nil {
		read = *p.CacheReadPerMTok
	}
	if p.CacheWritePerMTok != nil {
		write = *p.CacheWritePerMTok
	}
	fresh := max(u.Prompt-u.CacheRead-u.CacheWrite, 0)
	return (float64(fresh)*p.PromptPerMTok + float64(u.CacheRead)*read + float64(u.CacheWrite)*write + float64(u.Completion)*p.CompletionPerMTok) / 1e6, true
}

// PricesFrom builds a table from the user's settings.
func PricesFrom(settings map[string]config.ModelPrice) PriceTable {
	t := make(PriceTable, len(settings))
	for model, p := range settings {
		t[model] = Price{PromptPerMTok: p.PromptPerMTok, CompletionPerMTok: p.CompletionPerMTok, CacheReadPerMTok: p.CacheReadPerMTok, CacheWritePerMTok: p.CacheWritePerMTok}
	}
	return t
}

// Validate reports negative prices.
func (t PriceTable) Validate() error {
	for k, p := range t {
		if p.PromptPerMTok < 0 || p.CompletionPerMTok < 0 || (p.CacheReadPerMTok != nil && *p.CacheReadPerMTok < 0) || (p.CacheWritePerMTok != nil && *p.CacheWritePerMTok < 0) {
			return fmt.Errorf("price of %q is negative", k)
		}
	}
	return nil
}

// Cost estimates the cost of usage with this client's model and table.
func (c *Client) Cost(u Usage) (float64, bool) { return c.cfg.Prices.Cost(c.cfg.Type, c.cfg.Model, u) }
