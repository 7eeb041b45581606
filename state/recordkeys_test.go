package state

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecordKeys: the one list of a record's keys is Record's struct tags
// in order; the writer writes exactly those keys, in that order, before
// the details; the reader reads each back; and no kind may register a
// detail under one of them.
func TestRecordKeys(t *testing.T) {
	t.Parallel()
	var tags []string
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "-" {
			tags = append(tags, name)
		}
	}
	if !slices.Equal(tags, RecordKeys()) {
		t.Errorf("Record's json tags %q, the declared keys %q", tags, RecordKeys())
	}

	errMsg, stop, instance := "failed", "end_turn", 2
	full := &Record{TurnNumber: 3, AgentName: "a", Instance: &instance, Of: "a", Execution: 2, Skipped: true,
		InputData: "in", OutputData: "out", Error: &errMsg, Stderr: "warn", ExecutionTime: 0.5,
		Timestamp: time.Date(2026, 12, 6, 1, 2, 3, 4, time.UTC), StopReason: &stop,
		Usage: &Usage{Requests: 1, InputTokens: 2, OutputTokens: 3}, Handles: []ExecutionRef{{AgentName: "b", Execution: 1}}}
	if err := full.Details.Put(ChildDetail, &Child{Ensemble: "kid"}); err != nil {
		t.Fatal(err)
	}
	for _, indent := range []string{"", "  "} {
		b, err := full.AppendIndent(nil, "", indent)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := topKeys(t, b), append(RecordKeys(), ChildDetail); !slices.Equal(got, want) {
			t.Errorf("the writer's keys (indent %q) %q, want %q", indent, got, want)
		}
		var back Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if c := back.Child(); c == nil || c.Ensemble != "kid" {
			t.Errorf("read back (indent %q): child %+v", indent, c)
		}
		want := *full
		back.Details, want.Details = nil, nil
		if !reflect.DeepEqual(back, want) {
			t.Errorf("read back (indent %q):\n%+v\nwant\n%+v", indent, back, want)
		}
	}

	for _, k := range RecordKeys() {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterDetail(%q) took a record's key as a detail", k)
				}
			}()
			RegisterDetail(k)
		}()
	}
}

// topKeys are the keys of the JSON object b, in order.
func topKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
