package conditions

import (
	"context"
	"reflect"
	"unicode/utf8"
)

// The budgets of an evaluation: the meter the guard charges, and the sizes
// it charges for.

type meter struct {
	bytes int // left
	steps int // left
	ctx   context.Context
	work  int // units of work since ctx was last checked
	// reads collects the misses (Env.Reads; nil: none are kept), each
	// noted with source, the expression evaluated.
	reads  *Reads
	source string
}

const (
	// pollEvery is how many units of work pass between two checks of the
	// evaluation's context.
	pollEvery = 256
	// mapEntryWork is the work of printing one map entry: fmt sorts the keys
	// through reflection, several times slower than printing a list element.
	mapEntryWork = 8
)

func (m *meter) charge(n int) error {
	if n < 0 || n > m.bytes {
		m.bytes = -1
		return ErrMemoryBudget
	}
	m.bytes -= n
	return m.poll(1)
}

// step counts n units of work against the step budget.
func (m *meter) step(n int) error {
	m.steps -= n
	if m.steps < 0 {
		if err := m.ctx.Err(); err != nil {
			return err // the run is ending anyway: say why
		}
		return ErrStepBudget
	}
	return m.poll(n)
}

// poll checks the context once every pollEvery units of work.
func (m *meter) poll(n int) error {
	m.work += n
	if m.work < pollEvery {
		return nil
	}
	m.work = 0
	return m.ctx.Err()
}

func meterOf(v any) *meter {
	switch e := v.(type) {
	case *evalEnv:
		return e.m
	case evalEnv:
		return e.m
	case *itemEvalEnv:
		return e.m
	case *expectEvalEnv:
		return e.m
	case *requestEvalEnv:
		return e.m
	}
	panic("conditions: guard called without its environment")
}

// Sizes are estimates in bytes: a string its length, a collection 16 bytes
// per element (plus its elements for deepSize).
const elemSize = 16

func shallowSize(v any) int {
	switch x := v.(type) {
	case nil, bool, int, float64:
		return 0
	case string:
		return len(x)
	case []any:
		return elemSize * len(x)
	case map[string]any:
		return 2 * elemSize * len(x)
	case []string:
		return elemSize * len(x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return elemSize * rv.Len()
	case reflect.Map:
		return 2 * elemSize * rv.Len()
	case reflect.String:
		return rv.Len()
	}
	return 0
}

// chargePrinted charges the bytes and the work of printing v, before it is
// printed.
func (m *meter) chargePrinted(v any) error {
	size, work := deepSize(v, m.bytes)
	if err := m.step(work); err != nil {
		return err
	}
	return m.charge(size)
}

// deepSize estimates the size of v printed (JSON or %v), counting shared
// values each time they are reached, and the work of printing it (one unit
// per value, mapEntryWork per map entry). It stops once the size exceeds
// limit and then returns a size above limit.
func deepSize(v any, limit int) (size, work int) {
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		work++
		size += 2*depth + 8 // indentation, separators, small scalars
		switch x := v.(type) {
		case nil, bool, int, float64:
		case string:
			size += len(x) + utf8.RuneCountInString(x)/8 // some escaping slack
		case []any:
			for _, e := range x {
				if size > limit || !walk(e, depth+1) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				size += len(k)
				work += mapEntryWork
				if size > limit || !walk(e, depth+1) {
					return false
				}
			}
		default:
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.String:
				size += rv.Len()
			case reflect.Slice, reflect.Array:
				for i := 0; i < rv.Len(); i++ {
					if size > limit || !walk(rv.Index(i).Interface(), depth+1) {
						return false
					}
				}
			case reflect.Map:
				iter := rv.MapRange()
				for iter.Next() {
					size += 8
					work += mapEntryWork
					if size > limit || !walk(iter.Value().Interface(), depth+1) {
						return false
					}
				}
			case reflect.Pointer, reflect.Interface:
				if !rv.IsNil() {
					return walk(rv.Elem().Interface(), depth)
				}
			}
		}
		return size <= limit
	}
	if !walk(v, 0) || size > limit {
		return limit + 1, work
	}
	return size, work
}
