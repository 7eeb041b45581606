package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testdataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCommand(t *testing.T) {
	t.Parallel()
	dir := testdataDir(t)
	tests := []struct {
		file     string
		wantName string
		wantErr  string
	}{
		{"echo.py", "python3", ""},
		{"echo.sh", "bash", ""},
		{"echo.js", "node", ""},
		{"shebang_tool", filepath.Join(dir, "shebang_tool"), ""},
		{"shebang_wins.py", filepath.Join(dir, "shebang_wins.py"), ""},
		{"exec_noshebang.py", "python3", ""},
		{"unknown.txt", "", "not executable and its extension is not one of .py, .sh, .js, .rb"},
		{"missing.py", "", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			name, args, err := Command(filepath.Join(dir, tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.wantName {
				t.Errorf("name %q, want %q (args %q)", name, tt.wantName, args)
			}
		})
	}
	t.Run("rb", func(t *testing.T) {
		t.Parallel()
		p := filepath.Join(t.TempDir(), "x.rb")
		if err := os.WriteFile(p, []byte("puts 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if name, args, err := Command(p); err != nil || name != "ruby" || len(args) != 1 || args[0] != p {
			t.Errorf("Command(.rb) = %q %q %v", name, args, err)
		}
	})
}

func TestRunOutputCapBoundsMemory(t *testing.T) {
	t.Parallel()
	dir := testdataDir(t)
	res, err := Run(context.Background(), Spec{Path: "flood.py", Dir: dir, MaxOutput: 1 << 20})
	var oe *OutputLimitError
	if !errors.As(err, &oe) || err.Error() != "output exceeds 1 MiB; the process group was killed" {
		t.Fatalf("err = %v", err)
	}
	if res == nil || int64(len(res.Stdout)) > 1<<20 {
		t.Fatalf("kept %d bytes of stdout", len(res.Stdout))
	}
	if cap(res.Stdout) > 4<<20 {
		t.Errorf("stdout buffer grew to %d bytes", cap(res.Stdout))
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	tb := &tailBuffer{max: 10}
	for _, s := range []string{"abc", "defghij", "klmnop", "é!"} {
		_, _ = tb.Write([]byte(s))
	}
	if got := tb.String(); got != "…jklmnopé!" {
		t.Errorf("tail %q", got)
	}
	cut := &tailBuffer{max: 4}
	_, _ = cut.Write([]byte("éabc")) // the cut falls inside é
	if got := cut.String(); got != "…abc" {
		t.Errorf("tail %q", got)
	}
	small := &tailBuffer{max: 10}
	_, _ = small.Write([]byte(" short \n"))
	if got := small.String(); got != "short" {
		t.Errorf("tail %q", got)
	}
}
