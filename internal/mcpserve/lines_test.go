package mcpserve

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadLinesAreAnswered sends lines the SDK's stdio connection would end
// the session on, each followed by a valid request: every bad line gets
// its JSON-RPC error, and the server goes on serving.
func TestBadLinesAreAnswered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "good.yaml"), []byte("version: 1\nname: good\nagents:\n  - name: e\n    script: echo.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "echo.sh"), []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	server, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := Transport(inR, outW)
	done := make(chan error, 1)
	go func() {
		err := server.Run(t.Context(), tr)
		outW.Close() // the reads below end
		done <- err
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type reply struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	read := func() reply {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no reply: %v (the server: %v)", lines.Err(), <-done)
		}
		var r reply
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, lines.Text())
		}
		return r
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := read(); r.Error != nil || r.ID != 1.0 {
		t.Fatalf("initialize: %+v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, c := range []struct {
		line string
		code int
		id   any
		why  string
	}{
		{`garbage`, -32700, nil, "Parse error"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, -32700, nil, "Parse error"},
		{`{"jsonrpc":"2.0","id":2} {}`, -32700, nil, "Parse error"},
		{`5`, -32600, nil, "not a JSON object"},
		{`[]`, -32600, nil, "batches"},
		{`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, -32600, nil, "batches"},
		{`{"id":7,"method":"ping"}`, -32600, 7.0, `"jsonrpc"`},
		{`{"jsonrpc":"1.0","id":"a","method":"ping"}`, -32600, "a", `"jsonrpc"`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, nil, `"id"`},
		{`{"jsonrpc":"2.0","id":1e999,"method":"ping"}`, -32600, nil, `"id"`},
		{`{"jsonrpc":"2.0","id":3,"method":5}`, -32600, 3.0, `"method"`},
		{`{"jsonrpc":"2.0"}`, -32600, nil, `no "method"`},
		{`{"jsonrpc":"2.0","id":4,"error":"x"}`, -32600, 4.0, `"error"`},
		{`{"jsonrpc":"2.0","id":5,"method":"ping","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, -32600, nil, "deeper"},
	} {
		send(c.line)
		if r := read(); r.Error == nil || r.Error.Code != c.code || r.ID != c.id || !strings.Contains(r.Error.Message, c.why) {
			t.Errorf("%.40s: %+v %+v", c.line, r, r.Error)
		}
		send(`{"jsonrpc":"2.0","id":100,"method":"tools/list"}`)
		if r := read(); r.Error != nil || r.ID != 100.0 || !strings.Contains(string(r.Result), `"name":"good"`) {
			t.Fatalf("after line %d: %+v %s", i, r, r.Result)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("the server: %v", err)
	}
}

// TestLongLineIsAnswered: a line over the cap is answered without being
// kept, and the next line is served.
func TestLongLineIsAnswered(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("x", 300<<10) + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	pr, pw := io.Pipe()
	var out strings.Builder
	go filterLines(strings.NewReader(in), pw, &out, 100<<10, nil)
	passed, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	if string(passed) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Errorf("passed on: %.100q", passed)
	}
	if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the message is longer than 102400 bytes"}}` + "\n"; out.String() != want {
		t.Errorf("answered %q", out.String())
	}
}
