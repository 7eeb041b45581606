package ensemble

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Budget caps what a run, or one agent over the run, may spend on model
// requests (docs/semantics.md#budgets). A zero field is no cap.
type Budget struct {
	MaxTokens   int     // input + output tokens
	MaxRequests int     // model requests answered
	MaxCost     float64 // in the unit of the profiles' pricing
}

// Empty reports whether b caps nothing.
func (b *Budget) Empty() bool {
	return b == nil || (b.MaxTokens == 0 && b.MaxRequests == 0 && b.MaxCost == 0)
}

// Pricing is what a model profile's tokens cost, per million, in a unit of
// the user's choosing (docs/format.md#model-profiles).
type Pricing struct {
	InputPerMillion  float64
	OutputPerMillion float64
}

// Cost is what input and output tokens cost at p; 0 when p is nil.
func (p *Pricing) Cost(input, output int) float64 {
	if p == nil {
		return 0
	}
	return (float64(max(input, 0))*p.InputPerMillion + float64(max(output, 0))*p.OutputPerMillion) / 1e6
}

// Retry is an agent's retry: its failed executions are tried again, at most
// Attempts times in all, waiting Backoff, then twice as long each time
// (docs/semantics.md#retries).
type Retry struct {
	Attempts int
	Backoff  time.Duration
}

var (
	budgetKeys  = []string{"max_tokens", "max_requests", "max_cost"}
	pricingKeys = []string{"input_per_million", "output_per_million"}
	retryKeys   = []string{"attempts", "backoff"}
)

// budgetFields decodes max_tokens, max_requests and max_cost from m (an
// agent's budget: block, or conversation_limits).
func (d *decoder) budgetFields(m fields) *Budget {
	b := &Budget{MaxTokens: d.positive(m.get("max_tokens")), MaxRequests: d.positive(m.get("max_requests"))}
	if f := m.get("max_cost"); f.ok() {
		if x, ok := d.number(f); ok {
			if x <= 0 {
				d.bad(f, "must be more than 0, got %s", f.val.Value)
			}
			b.MaxCost = x
		}
	}
	if b.Empty() {
		return nil
	}
	return b
}

// budget decodes an agent's budget: block.
func (d *decoder) budget(f field) *Budget {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, f.nested(), budgetKeys...)
	if m == nil {
		return nil
	}
	b := d.budgetFields(m)
	if b == nil && !m.get("max_tokens").ok() && !m.get("max_requests").ok() && !m.get("max_cost").ok() {
		d.errorf(resolve(f.val), "%s sets no limit: give max_tokens, max_requests or max_cost", f.nested())
	}
	return b
}

// pricing decodes a model profile's pricing: block.
func (d *decoder) pricing(f field) *Pricing {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, f.nested(), pricingKeys...)
	if m == nil {
		return nil
	}
	p := &Pricing{}
	for _, k := range pricingKeys {
		d.need(m.get(k), false)
		x, ok := d.number(m.get(k))
		if ok && x < 0 {
			d.bad(m.get(k), "must not be negative, got %s", m.get(k).val.Value)
		}
		if k == "input_per_million" {
			p.InputPerMillion = x
		} else {
			p.OutputPerMillion = x
		}
	}
	return p
}

// retry decodes an agent's retry: block; backoff is a duration ("1s",
// "250ms") or a number of seconds, default 1s.
func (d *decoder) retry(f field) *Retry {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, f.nested(), retryKeys...)
	if m == nil {
		return nil
	}
	r := &Retry{Attempts: d.positive(m.get("attempts")), Backoff: time.Second}
	d.need(m.get("attempts"), false)
	if f := m.get("backoff"); f.ok() {
		v := resolve(f.val)
		if v.Kind == yaml.ScalarNode && (v.ShortTag() == "!!int" || v.ShortTag() == "!!float") {
			r.Backoff = d.seconds(f)
		} else if s := d.str(f); s != "" {
			dur, err := time.ParseDuration(s)
			if err != nil || dur <= 0 {
				d.bad(f, "must be a duration such as 1s or 250ms, or a number of seconds, got %s", strconv.Quote(s))
			}
			r.Backoff = dur
		}
	}
	return r
}

// fallbacks decodes a model profile's fallback: list of profile names; they
// are checked against every profile of the load once all are known
// (checkFallbacks).
func (d *decoder) fallbacks(p *ModelProfile, f field) {
	p.Fallback = d.strings(f)
	if !f.ok() {
		return
	}
	list := resolve(f.val)
	p.checkFallback = func(models map[string]*ModelProfile) {
		seen := map[string]bool{}
		for i, name := range p.Fallback {
			if i >= len(list.Content) {
				break
			}
			n := list.Content[i]
			switch {
			case name == p.Name:
				d.errorf(n, "model profile %q: fallback lists the profile itself", p.Name)
			case models[name] == nil:
				d.errorf(n, "model profile %q: unknown fallback profile %q%s", p.Name, name, suggest(name, slices.Sorted(maps.Keys(models))))
			case seen[name]:
				d.errorf(n, "model profile %q: fallback lists %q twice", p.Name, name)
			}
			seen[name] = true
		}
	}
}

// checkFallbacks checks every profile's fallback names against models.
func checkFallbacks(models map[string]*ModelProfile) {
	for _, name := range slices.Sorted(maps.Keys(models)) {
		if p := models[name]; p != nil && p.checkFallback != nil {
			p.checkFallback(models)
			p.checkFallback = nil
		}
	}
}

// String describes b for messages: "max_cost 0.5, max_requests 10".
func (b *Budget) String() string {
	if b == nil {
		return ""
	}
	s := ""
	add := func(k string, v any) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %v", k, v)
	}
	if b.MaxTokens > 0 {
		add("max_tokens", b.MaxTokens)
	}
	if b.MaxRequests > 0 {
		add("max_requests", b.MaxRequests)
	}
	if b.MaxCost > 0 {
		add("max_cost", b.MaxCost)
	}
	return s
}
