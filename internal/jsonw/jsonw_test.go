package jsonw

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var strs = []string{"", "plain", "quote \" back \\ slash", "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"bad \xff utf8 \xc3", "line\u2028para\u2029", "ünïcödé 日本 🎉", strings.Repeat("long ", 50)}

var floats = []float64{0, -0.0, 1, -1, 1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, -3.4e-12, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2}

type custom struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

func randomValue(rng *rand.Rand, depth int) any {
	n := rng.IntN(12)
	if depth > 3 {
		n = rng.IntN(6)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return floats[rng.IntN(len(floats))]
	case 3:
		return rng.IntN(1000) - 500
	case 4, 5:
		return strs[rng.IntN(len(strs))]
	case 6, 7:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[strs[rng.IntN(len(strs))]] = randomValue(rng, depth+1)
		}
		return m
	case 8, 9:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randomValue(rng, depth+1)
		}
		return l
	case 10:
		return custom{A: rng.IntN(9), B: strs[rng.IntN(len(strs))]}
	}
	return json.RawMessage(`{"raw": [1, 2, {"x": "y"}]}`)
}

// AppendIndent writes exactly the bytes of json.MarshalIndent, and of
// json.Marshal when prefix and indent are empty.
func TestAppendIndentMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	values := []any{map[string]any(nil), []any(nil), map[string]any{}, []any{}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	for _, s := range strs {
		values = append(values, s)
	}
	for _, f := range floats {
		values = append(values, f)
	}
	for range 2000 {
		values = append(values, randomValue(rng, 0))
	}
	// Objects of more keys than fit the writer's buffer on the stack.
	for _, n := range []int{16, 17, 40} {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%d", (i*7)%n)] = randomValue(rng, 1)
		}
		values = append(values, m)
	}
	for _, v := range values {
		for _, pi := range [][2]string{{"", "  "}, {"    ", "  "}, {"\t", "\t"}, {"", ""}} {
			want, err := json.MarshalIndent(v, pi[0], pi[1])
			if pi == [2]string{} {
				want, err = json.Marshal(v)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendIndent(nil, v, pi[0], pi[1], 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("value %#v, prefix %q:\ngot  %s\nwant %s", v, pi[0], got, want)
			}
		}
	}
}

func TestAppendIndentErrors(t *testing.T) {
	t.Parallel()
	for _, v := range []any{math.Inf(1), math.NaN(), map[string]any{"x": math.Inf(-1)}, []any{func() {}}} {
		if _, err := AppendIndent(nil, v, "", "  ", 0); err == nil {
			t.Errorf("%v: no error", v)
		}
	}
}

// BenchmarkSmallObjects writes what a history record's input data is
// mostly made of: objects of a handful of keys.
func BenchmarkSmallObjects(b *testing.B) {
	v := map[string]any{
		"agent": "ping", "input": "go", "turn": 12, "execution": 6, "request_parameters": nil,
		"dependencies":      map[string]any{"pong": map[string]any{"n": 11.0, "text": "pong 11"}},
		"injected_response": 6,
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendIndent(buf[:0], v, "  ", "  ", 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkString writes a sentence of plain text, what most strings of a
// history are.
func BenchmarkString(b *testing.B) {
	s := strings.Repeat("The reviewer approved the draft after two rounds. ", 4)
	var buf []byte
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
