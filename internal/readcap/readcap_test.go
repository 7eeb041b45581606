package readcap_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func TestReadAll(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		r     io.Reader
		limit int64
		want  string
		err   string
	}{
		{"under", strings.NewReader("abc"), 4, "abc", ""},
		{"exactly", strings.NewReader("abcd"), 4, "abcd", ""},
		{"over", strings.NewReader("abcde"), 4, "", "larger than 4 bytes"},
		{"endless", endless{}, 2 << 20, "", "larger than 2MiB"},
	} {
		got, err := readcap.ReadAll(tc.r, tc.limit)
		var tl *readcap.TooLargeError
		switch {
		case tc.err == "" && (err != nil || string(got) != tc.want):
			t.Errorf("%s: %q, %v", tc.name, got, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.As(err, &tl)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readcap.ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("%q, %v", b, err)
	}
	if _, err := readcap.ReadFile(p, 4); err == nil {
		t.Error("no error past the limit")
	}
	// A regular file over the limit is refused from its size, unread: a
	// sparse file of 8 GiB takes no time.
	big := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	if _, err := readcap.ReadFile(big, 1<<30); err == nil || err.Error() != "larger than 1GiB" {
		t.Errorf("an 8 GiB file under a 1 GiB limit: %v", err)
	}
	if _, err := readcap.ReadFile(p+"-missing", 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{{16 << 20, "16MiB"}, {4 << 30, "4GiB"}, {2999, "2999 bytes"}, {64 << 10, "64KiB"}, {1536, "1536 bytes"}, {1 << 40, "1024GiB"}} {
		if got := readcap.Size(tc.n); got != tc.want {
			t.Errorf("Size(%d) = %q, want %q", tc.n, got, tc.want)
		}
		if n, err := readcap.ParseSize(tc.want); tc.n%1024 == 0 && (err != nil || n != tc.n) {
			t.Errorf("ParseSize(%q) = %d, %v", tc.want, n, err)
		}
	}
	for _, tc := range []struct {
		s    string
		want int64
	}{{"20MB", 20e6}, {" 3 KiB ", 3 << 10}, {"7", 7}, {"2B", 2}, {"1GB", 1e9}} {
		if n, err := readcap.ParseSize(tc.s); err != nil || n != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.s, n, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1.5MiB", "lots", "9999999999999GiB"} {
		if _, err := readcap.ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

// zeros is an endless stream of NUL bytes that counts what it gave.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

// Text is refused at its first NUL byte, so that /dev/zero given for a
// text file fails after a read or two, not after the limit (1 GiB for a
// responses file) was read; text without one reads as ReadAll does.
func TestReadTextStopsAtTheFirstNUL(t *testing.T) {
	t.Parallel()
	z := &zeros{}
	_, err := readcap.ReadText(z, 1<<30)
	var nt *readcap.NotTextError
	if !errors.As(err, &nt) || nt.Offset != 0 || err.Error() != "not a text file (a NUL byte at offset 0)" {
		t.Fatalf("err %v", err)
	}
	if z.read > 1<<20 {
		t.Errorf("%d bytes read before the NUL was seen", z.read)
	}
	_, err = readcap.ReadText(io.MultiReader(strings.NewReader("name: x\n"), z), 1<<30)
	if !errors.As(err, &nt) || nt.Offset != 8 {
		t.Errorf("err %v", err)
	}
	if got, err := readcap.ReadText(strings.NewReader("abc"), 4); err != nil || string(got) != "abc" {
		t.Errorf("%q %v", got, err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := readcap.ReadTextFile("/dev/zero", 1<<30); !errors.As(err, &nt) {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}

// A Reader reads a stream in pieces under a limit: past it, or at a NUL
// byte of text, it fails as it reads, with the offset of the NUL; what it
// read is the caller's to keep or not.
func TestReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		r     io.Reader
		limit int64
		text  bool
		n     int64 // bytes read before the error
		err   string
	}{
		{"under", strings.NewReader("abc"), 4, true, 3, ""},
		{"exactly", strings.NewReader("abcd"), 4, true, 4, ""},
		{"over", strings.NewReader("abcde"), 4, true, 4, "larger than 4 bytes"},
		{"endless", endless{}, 1 << 20, false, 1 << 20, "larger than 1MiB"},
		{"a NUL", io.MultiReader(strings.NewReader("ab"), strings.NewReader("c\x00")), 10, true, 3, "not a text file (a NUL byte at offset 3)"},
		{"NUL as bytes", strings.NewReader("a\x00"), 10, false, 2, ""},
	} {
		n, err := io.Copy(io.Discard, readcap.NewReader(tc.r, tc.limit, tc.text))
		if (tc.err == "" && err != nil) || (tc.err != "" && (err == nil || err.Error() != tc.err)) || n > tc.n {
			t.Errorf("%s: read %d, %v; want at most %d, %q", tc.name, n, err, tc.n, tc.err)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("12345"), 0o600)
	if _, err := readcap.Open(p, 4, true); err == nil || err.Error() != "larger than 4 bytes" {
		t.Errorf("a file over the limit: %v", err)
	}
	f, err := readcap.Open(p, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); string(b) != "12345" || err != nil {
		t.Errorf("%q %v", b, err)
	}
	if _, err := readcap.Open(filepath.Join(dir, "missing"), 4, true); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// allocated is how many bytes f allocates, by the runtime's count.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A stream of unknown size (a pipe given for a file) is read in blocks:
// one that goes past the limit has allocated about the limit when it
// fails, one under it about twice its size (the blocks, then the one
// buffer they are joined into). A buffer grown as it read allocated five
// times the limit, most of it garbage still held when the read failed.
// Not parallel: it counts the process's allocations.
func TestStreamAllocatesAboutItsSize(t *testing.T) {
	const limit = 32 << 20
	got := allocated(func() {
		if _, err := readcap.ReadAll(endless{}, limit); err == nil {
			t.Error("an endless stream was read")
		}
	})
	if got > limit+limit/8 {
		t.Errorf("an endless stream read to a limit of %d allocated %d bytes", limit, got)
	}
	data := strings.Repeat("ab\n", limit/3)
	var b []byte
	got = allocated(func() {
		var err error
		if b, err = readcap.ReadText(io.MultiReader(strings.NewReader(data)), limit); err != nil {
			t.Error(err)
		}
	})
	if string(b) != data {
		t.Errorf("read %d bytes, not the stream's %d", len(b), len(data))
	}
	if got > 2*limit+limit/8 {
		t.Errorf("a stream of %d bytes allocated %d", len(data), got)
	}
	// A regular file is read into one buffer of its size.
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got = allocated(func() {
		if b, _ = readcap.ReadTextFile(p, limit); len(b) != len(data) {
			t.Errorf("read %d bytes of %d", len(b), len(data))
		}
	})
	if got > uint64(len(data))+64<<10 {
		t.Errorf("a file of %d bytes allocated %d", len(data), got)
	}
}
