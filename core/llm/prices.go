package llm

import (
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	PromptPerMTok     float64 `json:"promptPerMTok"`
	CompletionPerMTok float64 `json:"completionPerMTok"`
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

// Cost estimates what usage of model cost; known says whether the table
// has a price for it.
func (t PriceTable) Cost(model string, u Usage) (usd float64, known bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return float64(u.Prompt)/1e6*p.PromptPerMTok + float64(u.Completion)/1e6*p.CompletionPerMTok, true
}

// PricesFrom builds a table from the user's settings.
func PricesFrom(settings map[string]config.ModelPrice) PriceTable {
	t := make(PriceTable, len(settings))
	for model, p := range settings {
		t[model] = Price{PromptPerMTok: p.PromptPerMTok, CompletionPerMTok: p.CompletionPerMTok}
	}
	return t
}

// Validate reports negative prices.
func (t PriceTable) Validate() error {
	for k, p := range t {
		if p.PromptPerMTok < 0 || p.CompletionPerMTok < 0 {
			return fmt.Errorf("price of %q is negative", k)
		}
	}
	return nil
}

// Cost estimates the cost of usage with this client's model and table.
func (c *Client) Cost(u Usage) (float64, bool) { return c.cfg.Prices.Cost(c.cfg.Model, u) }
