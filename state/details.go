package state

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Detail is one thing an agent's kind records of an execution beyond the
// fields every Record has: a member of the record's JSON object, which the
// kind encodes (as the ensemble kind does "child" and "iterations", the
// LLM kind "model_profile_used"). State, the store, the JSON writer and
// the conditions carry details as they are, so a kind that records
// something new edits none of them.
type Detail struct {
	Key   string
	Value json.RawMessage
}

// Details are a record's details, sorted by key.
type Details []Detail

// Put sets key to v, encoded as JSON.
func (d *Details) Put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("detail %q: %w", key, err)
	}
	i, found := slices.BinarySearchFunc(*d, key, func(x Detail, k string) int { return cmp.Compare(x.Key, k) })
	if found {
		(*d)[i].Value = b
	} else {
		*d = slices.Insert(*d, i, Detail{key, b})
	}
	return nil
}

// Get is the JSON of key; nil when the record has none.
func (d Details) Get(key string) json.RawMessage {
	for _, x := range d {
		if x.Key == key {
			return x.Value
		}
	}
	return nil
}

// Decode decodes the detail key into v, reporting whether there was one.
func (d Details) Decode(key string, v any) (bool, error) {
	raw := d.Get(key)
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// MarshalJSON writes the details as one object.
func (d Details) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, x := range d {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, _ := json.Marshal(x.Key)
		buf = append(append(append(buf, k...), ':'), x.Value...)
	}
	return append(buf, '}'), nil
}

// UnmarshalJSON reads an object of details.
func (d *Details) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*d = (*d)[:0]
	for k, v := range m {
		*d = append(*d, Detail{k, v})
	}
	slices.SortFunc(*d, func(a, b Detail) int { return cmp.Compare(a.Key, b.Key) })
	if len(*d) == 0 {
		*d = nil
	}
	return nil
}

// The keys of details that kinds record (RegisterDetail): reading a record
// back looks for them.
// A child ensemble's run (ChildDetail) is always one: the records of
// nested runs are read by more than the kinds that make them.
var (
	detailMu   sync.RWMutex
	detailKeys = []string{ChildDetail}
	detailPats = [][]byte{[]byte(`"` + ChildDetail + `":`)} // `"key":`, what a record's JSON holds when it has the detail
)

// recordKeys are the JSON keys of Record's fields, in the order a record
// is written, declared once: TestRecordKeys holds Record's struct tags,
// its writer (AppendIndent) and its reader (UnmarshalJSON, and the details
// RegisterDetail refuses) to this list, and the inspector's tests hold its
// page's script to it.
var recordKeys = []string{"turn_number", "agent_name", "instance", "of", "execution", "skipped", "input_data",
	"output_data", "error", "stderr", "execution_time", "timestamp", "stop_reason", "usage", "handles"}

// RecordKeys are the JSON keys of the fields every record has, in the order
// a record is written; its details' keys follow them.
func RecordKeys() []string { return slices.Clone(recordKeys) }

// RegisterDetail declares the keys of the details a kind records, so that
// a record read back (from a state file, a database, a result) has them
// again: a kind calls it once, from its package's init. A key of the
// fields every record has is a programming error: it panics.
func RegisterDetail(keys ...string) {
	detailMu.Lock()
	defer detailMu.Unlock()
	for _, k := range keys {
		if slices.Contains(recordKeys, k) {
			panic(fmt.Sprintf("state: detail %q is a field of every record", k))
		}
		if !slices.Contains(detailKeys, k) {
			detailKeys = append(detailKeys, k)
			detailPats = append(detailPats, []byte(`"`+k+`":`))
		}
	}
}

// readDetails reads the registered details of the record whose JSON is b.
// Most records have none, and their JSON is only scanned for the keys.
func readDetails(b []byte) (Details, error) {
	detailMu.RLock()
	defer detailMu.RUnlock()
	some := false
	for _, p := range detailPats {
		if bytes.Contains(b, p) {
			some = true
			break
		}
	}
	if !some {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var d Details
	for _, k := range detailKeys {
		if v, ok := m[k]; ok {
			d = append(d, Detail{k, v})
		}
	}
	slices.SortFunc(d, func(a, b Detail) int { return cmp.Compare(a.Key, b.Key) })
	return d, nil
}
