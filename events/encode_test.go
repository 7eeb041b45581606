package events_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// marshalerValue writes itself, with HTML characters and spaces that
// json.Marshal escapes and compacts.
type marshalerValue struct{ S string }

func (m marshalerValue) MarshalJSON() ([]byte, error) {
	return []byte(`{ "s" : "` + m.S + `<&>" }`), nil
}

// samples are, for every field of Event, values to write: the empty one
// json.Marshal omits and values of each shape the field takes.
func samples() map[string][]any {
	at := time.Date(2026, 12, 6, 23, 0, 0, 123456789, time.UTC)
	zoned := time.Date(1999, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -(5*3600+30*60)))
	odd := "a \"quoted\" <tag> & \\ \n\t\x01 é \u2028 \xff end"
	values := []any{nil, "text", odd, 1.5, 0.0, 1e-7, 1e21, -3, true, false, []any{1.5, "x", nil, map[string]any{}},
		map[string]any{"b": 1, "a": []any{}, "<": odd}, map[string]int{"z": 1, "a": 2}, []string{"x"}, (*state.Stopped)(nil),
		&state.Stopped{}, state.Warning{Message: odd}, marshalerValue{S: "m"}, json.RawMessage(`{"raw": [1, 2]}`), float32(0.1), int64(1 << 60), []byte("bytes")}
	res := &engine.Result{Ensemble: "e", ConversationHistory: []*state.Record{}, Errors: []engine.RunError{}, Warnings: []state.Warning{}, Input: "<in>",
		CompletionReason: "completed", TurnCount: 2, AgentExecutionCount: map[string]int{"b": 1, "a": 2},
		FinalState: map[string]any{"a": map[string]any{"x": []any{1.5, "&"}}}, Output: "out", DurationSeconds: 0.25}
	return map[string][]any{
		"Type":         {events.Type(""), events.RunStarted, events.Type(odd)},
		"Time":         {time.Time{}, at, zoned},
		"Turn":         {0, 1, -2, math.MaxInt},
		"Agent":        {"", "writer", odd},
		"Execution":    {0, 3},
		"Agents":       {[]string(nil), []string{}, []string{"a"}, []string{"a", odd, ""}},
		"Tool":         {"", "search", odd},
		"ToolID":       {"", "call_1"},
		"Arguments":    {"", `{"q": 1}`, odd},
		"Output":       values,
		"Error":        {"", odd},
		"Message":      {"", "completed", odd},
		"Duration":     {0.0, 0.25, 1e-9, 12345678.5, 3e21},
		"Result":       append(values, res, &engine.Result{}, (*engine.Result)(nil)),
		"Attempt":      {0, 2},
		"Spend":        values,
		"Question":     {"", odd},
		"Dependencies": {map[string]any(nil), map[string]any{}, map[string]any{"a": "x", "b": []any{1.0}, odd: nil}},
		"Deadline":     {(*time.Time)(nil), &at, &zoned},
		"Expectations": values,
		"Warning":      values,
	}
}

// Marshal writes every event as json.Marshal does: every field of Event
// with each of its samples, then events of every type with fields drawn
// at random. A field added to Event fails until it has samples.
func TestMarshalEveryField(t *testing.T) {
	t.Parallel()
	s := samples()
	typ := reflect.TypeFor[events.Event]()
	check := func(ev events.Event) {
		t.Helper()
		want, werr := json.Marshal(ev)
		got, err := events.Marshal(ev)
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%+v: %v\n%s\nwant (%v)\n%s", ev, err, got, werr, want)
		}
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		vals, ok := s[f.Name]
		if !ok {
			t.Fatalf("Event.%s has no samples", f.Name)
		}
		for _, v := range vals {
			ev := events.Event{Type: events.AgentCompleted, Time: time.Unix(1, 0).UTC()}
			set(reflect.ValueOf(&ev).Elem().Field(i), v)
			check(ev)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, ty := range events.Types {
		for range 300 {
			ev := events.Event{Type: ty}
			for i := range typ.NumField() {
				if f := typ.Field(i); f.Name != "Type" && r.IntN(3) == 0 {
					vals := s[f.Name]
					set(reflect.ValueOf(&ev).Elem().Field(i), vals[r.IntN(len(vals))])
				}
			}
			check(ev)
		}
	}
}

// set sets the field f to v (nil: its zero value).
func set(f reflect.Value, v any) {
	if v == nil {
		f.SetZero()
		return
	}
	f.Set(reflect.ValueOf(v))
}

// A value json.Marshal refuses is refused with its error.
func TestMarshalRefusesAsJSON(t *testing.T) {
	t.Parallel()
	for name, ev := range map[string]events.Event{
		"a year past 9999":  {Type: events.RunStarted, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"NaN":               {Type: events.AgentFinished, Duration: math.NaN()},
		"a channel":         {Type: events.AgentCompleted, Output: make(chan int)},
		"an infinite spend": {Type: events.BudgetExceeded, Spend: map[string]any{"x": math.Inf(1)}},
	} {
		_, want := json.Marshal(ev)
		_, err := events.Marshal(ev)
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		// AppendJSON leaves dst as it was
		b, err := events.AppendJSON([]byte("kept"), ev)
		if err == nil || string(b) != "kept" {
			t.Errorf("%s: AppendJSON: %v, %q", name, err, b)
		}
	}
}

// BenchmarkMarshal encodes the events of a served run of three agents
// (docs/performance.md#serving), by Marshal and by json.Marshal: the 16
// events of its turns, then its run_completed.
func BenchmarkMarshal(b *testing.B) {
	at := time.Now().UTC()
	res := &engine.Result{Ensemble: "three", ConversationHistory: []*state.Record{}, Errors: []engine.RunError{}, Warnings: []state.Warning{}, Input: "document 1",
		CompletionReason: "completed", TurnCount: 3, AgentExecutionCount: map[string]int{"extract": 1, "analyse": 1, "report": 1},
		FinalState: map[string]any{"extract": map[string]any{"facts": []any{"a", "b"}}, "analyse": map[string]any{"verdict": "fine"}, "report": "All fine."}, Output: "All fine."}
	var evs []events.Event
	evs = append(evs, events.Event{Type: events.RunStarted, Time: at, Message: "document 1"})
	for i, a := range []string{"extract", "analyse", "report"} {
		evs = append(evs,
			events.Event{Type: events.TurnStarted, Time: at, Turn: i + 1, Agents: []string{a}},
			events.Event{Type: events.AgentStarted, Time: at, Turn: i + 1, Agent: a, Execution: 1},
			events.Event{Type: events.AgentFinished, Time: at, Turn: i + 1, Agent: a, Execution: 1, Duration: 0.000012},
			events.Event{Type: events.AgentCompleted, Time: at, Turn: i + 1, Agent: a, Execution: 1, Output: map[string]any{"verdict": "fine"}, Duration: 0.000012},
			events.Event{Type: events.TurnCompleted, Time: at, Turn: i + 1})
	}
	evs = append(evs, events.Event{Type: events.RunCompleted, Time: at, Turn: 3, Message: "completed", Result: res})
	n := len(evs) - 1
	for set, evs := range map[string][]events.Event{"turns": evs[:n], "run_completed": evs[n:]} {
		for name, marshal := range map[string]func(events.Event) ([]byte, error){
			"Marshal":      events.Marshal,
			"json.Marshal": func(ev events.Event) ([]byte, error) { return json.Marshal(ev) },
		} {
			b.Run(set+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, ev := range evs {
						if _, err := marshal(ev); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
