package kinds

import (
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/kinds/llm"
)

// Options are the built-in kinds' own options, which the host every kind
// gets (agent.Host) does not carry. The zero value is Builtin's: no
// terminal, no streaming.
type Options struct {
	// Ask are the ask kind's: the terminal a person answers on, and what a
	// question that cannot be asked there does.
	Ask ask.Options
	// Stream is the llm kind's: model replies stream as text_delta events.
	Stream bool
}

// With returns a copy of r whose built-in ask and llm kinds have the
// options o; the other kinds are r's.
func (r *Registry) With(o Options) *Registry {
	c := New()
	for _, k := range r.list {
		switch k.(type) {
		case ask.Kind:
			k = ask.Kind{Options: o.Ask}
		case llm.Kind:
			k = llm.Kind{Stream: o.Stream}
		}
		c.Register(k)
	}
	return c
}
