package clients_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// testToken is the token the test servers expect, which the clients send
// as their API key.
const testToken = "test-token-0123456789"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH (make python-link; PATH=$PWD/bin/python:$PATH)")
	}
}

// lookup is the environment with extra's variables over the process's.
func lookup(extra map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := extra[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
}

// server is `ensemble serve` of the ensembles in dir, on 127.0.0.1.
type server struct {
	url  string
	dir  string // the ensembles
	stop func()
}

func startServer(t *testing.T, dir string, tune func(*serve.Options)) *server {
	t.Helper()
	needPython(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := serve.Options{Paths: []string{dir}, Listen: l.Addr().String(), State: filepath.Join(dir, "serve.db"),
		Token: testToken, LookupEnv: lookup(nil), KeepAlive: 50 * time.Millisecond, Grace: time.Second,
		Skipped: func(path string, why error) { t.Errorf("%s: %v", path, why) }}
	if tune != nil {
		tune(&o)
	}
	srv, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	s := &server{url: "http://" + l.Addr().String(), dir: dir}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

// do sends a request with the token and body (none when ""), and returns
// the status, the body and the headers of the reply.
func (s *server) do(t *testing.T, method, path, body string) (int, []byte, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}
