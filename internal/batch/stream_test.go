package batch_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/batch"
)

// lines is a stream of n lines, each line made by line(i), generated as
// it is read: a large inputs file without its bytes in the test's memory.
type lines struct {
	n, i int
	line func(i int) string
	cur  string
	h    io.Writer // what was read, hashed
}

func (l *lines) Read(p []byte) (int, error) {
	for l.cur == "" {
		if l.i == l.n {
			return 0, io.EOF
		}
		l.cur = l.line(l.i)
		l.i++
	}
	n := copy(p, l.cur)
	l.cur = l.cur[n:]
	l.h.Write(p[:n])
	return n, nil
}

// allocated is how many bytes f allocates, by the runtime's count.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Inputs are read line by line: what reading them allocates is about what
// they hold, not the stream's size. A stream of 64 MiB whose lines are
// short inputs padded with spaces, or whose one long line is refused past
// MaxLine, allocates a few MiB; reading it whole allocated over 64 MiB
// (twice that from standard input, read into a buffer grown by doubling).
// The sum is the SHA-256 of the bytes read.
func TestInputsAreStreamed(t *testing.T) {
	pad := strings.Repeat(" ", 1<<20)
	long := `"` + strings.Repeat("x", 64<<20) + `"` + "\n"
	padded := make([]string, 64) // made before the count starts
	for i := range padded {
		padded[i] = `"a` + strings.Repeat("b", i) + `"` + pad + "\n"
	}
	for _, tc := range []struct {
		name  string
		n     int
		line  func(i int) string
		count int    // inputs read; 0: an error
		err   string // the error
		most  uint64 // bytes allocated, at most
	}{
		{"short inputs, long padding", 64, func(i int) string { return padded[i] }, 64, "", 8 << 20},
		{"one line past MaxLine", 2, func(i int) string {
			if i == 0 {
				return `"first"` + "\n"
			}
			return long
		}, 0, "<stdin>:2: the line is larger than 10MiB", 24 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) { // not parallel: it counts the process's allocations
			h := sha256.New()
			src := &lines{n: tc.n, line: tc.line, h: h}
			var inputs []*batch.Input
			var sum string
			var err error
			got := allocated(func() { inputs, sum, err = batch.ReadInputs("-", src) })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
			} else {
				if err != nil || len(inputs) != tc.count {
					t.Fatalf("%d inputs, %v", len(inputs), err)
				}
				if want := hex.EncodeToString(h.Sum(nil)); sum != want {
					t.Errorf("sum %s, want %s", sum, want)
				}
				if in := inputs[3]; in.Input != "abbb" || in.Line != 4 || string(in.ID) != "4" {
					t.Errorf("input 3: %+v", in)
				}
			}
			if most := tc.most * raceAllocs; got > most {
				t.Errorf("reading the inputs allocated %d bytes, want at most %d", got, most)
			}
			t.Logf("allocated %d", got)
		})
	}
}

// A file is read as standard input is, with the same sum; a NUL byte, or
// a file over MaxInputs, is a *batch.ReadError saying so.
func TestInputsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := "\ufeff\"a\"\r\n\n  {\"id\": 7, \"input\": {\"k\": [1, 2]}}  \n\"c\""
	good := filepath.Join(dir, "in.jsonl")
	nul := filepath.Join(dir, "nul.jsonl")
	big := filepath.Join(dir, "big.jsonl")
	os.WriteFile(good, []byte(data), 0o600)
	os.WriteFile(nul, []byte("\"a\"\n\"b\x00\"\n"), 0o600)
	if f, err := os.Create(big); err == nil {
		f.Truncate(batch.MaxInputs + 1)
		f.Close()
	}
	inputs, sum, err := batch.ReadInputs(good, nil)
	want := sha256.Sum256([]byte(data))
	if err != nil || len(inputs) != 3 || sum != hex.EncodeToString(want[:]) {
		t.Fatalf("%d inputs, sum %s, %v", len(inputs), sum, err)
	}
	if in := inputs[1]; in.Input != `{"k":[1,2]}` || in.Line != 3 || string(in.ID) != "7" || inputs[0].Input != "a" || inputs[2].Line != 4 {
		t.Errorf("inputs %+v %+v %+v", inputs[0], in, inputs[2])
	}
	for path, msg := range map[string]string{
		nul: "the inputs are not a text file (a NUL byte at offset 6)",
		big: "the inputs are larger than 1GiB",
	} {
		_, _, err := batch.ReadInputs(path, nil)
		if _, ok := err.(*batch.ReadError); !ok || err.Error() != msg {
			t.Errorf("%s: %v, want the ReadError %q", filepath.Base(path), err, msg)
		}
	}
}

// BenchmarkReadInputs reads 64 MiB of inputs, 64 lines of 1 MiB, and
// reports the bytes it allocated per byte read (about 2: the input kept,
// and its JSON object's raw value decoded on the way).
func BenchmarkReadInputs(b *testing.B) {
	line := `{"input": "` + strings.Repeat("y", 1<<20) + `"}` + "\n"
	var total uint64
	for b.Loop() {
		src := &lines{n: 64, line: func(int) string { return line }, h: io.Discard}
		total += allocated(func() {
			if _, _, err := batch.ReadInputs("-", src); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(64*len(line)), "alloc-bytes/byte")
	b.SetBytes(int64(64 * len(line)))
}

// A batch holds at most MaxInputCount inputs: the line of the one past
// it is an error naming it (so MaxInputCount are read), and nothing after
// it is read.
func TestInputCountIsCapped(t *testing.T) {
	t.Parallel()
	src := &lines{n: batch.MaxInputCount + 10, line: func(int) string { return "\"a\"\n" }, h: io.Discard}
	_, _, err := batch.ReadInputs("-", src)
	want := "<stdin>:1000001: more than 1000000 inputs, the most a batch holds: split the file into batches of fewer"
	if err == nil || err.Error() != want {
		t.Errorf("err %v, want %q", err, want)
	}
	if src.i > batch.MaxInputCount+1+lineBuffer/4 {
		t.Errorf("%d lines read", src.i)
	}
}

// lineBuffer is the reader's buffer, which may have read ahead of the line
// past the cap.
const lineBuffer = 64 << 10
