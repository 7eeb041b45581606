package responses

import (
	"errors"
	"fmt"

	"github.com/ensemble-run/ensemble/ensemble"
)

// misplacedSimulations reports the responses of r that are a mapping whose
// one key is simulate: a simulated user written as an item of the list,
// where it would be taken as the output itself, {"simulate": {...}}, and
// the model would never be asked. A simulation replaces the whole list;
// an output of that shape can still be given as JSON text.
func misplacedSimulations(name string, r *Responses, lines *sourceLines) []*ensemble.Error {
	var errs []*ensemble.Error
	for _, agent := range r.Agents() {
		ent := r.entries[agent]
		for i, v := range ent.Values {
			m, ok := v.(map[string]any)
			if _, sim := m["simulate"]; !ok || !sim || len(m) != 1 || i >= len(ent.Lines) {
				continue
			}
			line := int(ent.Lines[i])
			errs = append(errs, &ensemble.Error{File: name, Line: line, Column: 1, Source: sourceLine(lines, line),
				Message: fmt.Sprintf("response %d of agent %q is {simulate: ...}, which would be its output as it is: "+
					"a simulated user replaces the whole list (%s: {simulate: {model_profile, prompt}}); "+
					`an output of that shape is written as JSON text ('{"simulate": ...}')`, i+1, agent, agent)})
		}
	}
	return errs
}

// withMisplaced adds the misplaced simulations of r to err, a parse's
// error (nil, or an *ensemble.ErrorList), in file order.
func withMisplaced(name string, r *Responses, err error, lines *sourceLines) error {
	if r == nil {
		return err
	}
	found := misplacedSimulations(name, r, lines)
	if len(found) == 0 {
		return err
	}
	var list *ensemble.ErrorList
	if err != nil && !errors.As(err, &list) {
		return err
	}
	var prior []*ensemble.Error
	more := 0
	if list != nil {
		var l ensemble.ErrorList
		l, more = splitMore(*list)
		prior = l
	}
	return errorList(append(prior, found...), more)
}
