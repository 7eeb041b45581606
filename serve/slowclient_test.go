package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// slowServer is a server whose slow-client timeouts are short.
func slowServer(t *testing.T) *server {
	return startServer(t, ensembles(t), func(o *serve.Options) {
		o.ReadTimeout, o.IdleTimeout, o.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
		o.MaxBody = 8 << 20
	})
}

// dial connects to s with a small receive buffer, so that an answer
// larger than the buffers blocks the server's writes.
func dial(t *testing.T, s *server) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.DialContext(context.Background(), "tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// a generous limit: the server lets go of the connection long before
	c.SetDeadline(time.Now().Add(time.Minute))
	return c
}

// A connection left open between requests is closed (IdleTimeout), and a
// body that trickles in is refused (ReadTimeout, 408), with or without
// the token: neither holds a connection for good.
func TestSlowClientsAreLetGo(t *testing.T) {
	t.Parallel()
	s := slowServer(t)
	c := dial(t, s)
	fmt.Fprintf(c, "GET /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection: %v, want it closed", err)
	}
	for _, c := range []struct {
		headers string
		want    int
	}{
		{"Host: 127.0.0.1\r\nAuthorization: Bearer " + testToken, http.StatusRequestTimeout},
		{"Host: 127.0.0.1", http.StatusUnauthorized},
		{"Host: evil.example", http.StatusForbidden},
	} {
		c2 := dial(t, s)
		fmt.Fprintf(c2, "POST /v1/ensembles/count/runs HTTP/1.1\r\n%s\r\nContent-Length: 1000\r\n\r\n{\"in", c.headers)
		resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
		if err != nil {
			t.Fatalf("a slow body (%q): %v", c.headers, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.want || !strings.Contains(string(b), `"error"`) {
			t.Errorf("a slow body (%q): %d %s, want %d", c.headers, resp.StatusCode, b, c.want)
		}
	}
}

// A client that stops reading a large answer is let go (WriteTimeout):
// the server ends the answer and closes the connection instead of waiting
// for it for good.
func TestClientThatStopsReadingIsLetGo(t *testing.T) {
	t.Parallel()
	// Only the writes are short of time, and not too short: the 4 MB
	// answer that starts the run is read by a client on a machine that
	// may be loaded, under the race detector.
	s := startServer(t, ensembles(t), func(o *serve.Options) {
		o.WriteTimeout, o.MaxBody = 2*time.Second, 8<<20
	})
	r := s.start(t, "secret", map[string]any{"input": strings.Repeat("x", 4<<20)})
	c := dial(t, s)
	fmt.Fprintf(c, "GET /v1/runs/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", r.RunID, testToken)
	// Nothing is read for far longer than WriteTimeout: the server gives
	// up meanwhile. It may have closed the connection before its headers
	// could be read (a reset drops what the client had not read): let go
	// as well.
	time.Sleep(15 * time.Second)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		t.Fatalf("the whole answer came (%d bytes, Content-Length %s): the server waited for the client", n, strconv.FormatInt(resp.ContentLength, 10))
	}
}

// Past MaxConns the server accepts no more connections until one closes:
// a flood of connections that send nothing cannot take every file
// descriptor the runs need. The client past the cap is served once a
// place is free.
func TestConnectionsAreCapped(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), func(o *serve.Options) { o.MaxConns = 2 })
	held := []net.Conn{dial(t, s), dial(t, s)} // they send nothing
	served := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", s.url+"/v1/ensembles", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := (&http.Client{Timeout: patience}).Do(req)
		if err != nil {
			served <- 0
			return
		}
		resp.Body.Close()
		served <- resp.StatusCode
	}()
	select {
	case code := <-served:
		t.Fatalf("served past the cap: %d", code)
	case <-time.After(500 * time.Millisecond):
	}
	held[0].Close()
	if code := <-served; code != 200 {
		t.Fatalf("once a place is free: %d", code)
	}
}

// A request that waits longer than ReadTimeout, once its body is read
// (Prefer: wait on a run that takes a while), is not cut: the read
// deadline ends with the body, and net/http's watch on the connection
// after it must not cancel the request.
func TestAWaitLongerThanReadTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ens := "name: slow\ninput: go\nagents:\n  - name: nap\n    script: nap.py\n"
	nap := "import json, sys, time\njson.load(sys.stdin)\ntime.sleep(1.5)\nprint(json.dumps({\"slept\": True}))\n"
	for name, body := range map[string]string{"slow/ensemble.yaml": ens, "slow/nap.py": nap} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, dir, func(o *serve.Options) {
		o.ReadTimeout, o.IdleTimeout, o.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	})
	r := s.start(t, "slow", map[string]any{"input": "x"})
	if r.Status != "completed" {
		t.Fatalf("a run waited on past ReadTimeout: %+v", r)
	}
}
