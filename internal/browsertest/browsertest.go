// Package browsertest starts the headless Chromium that the browser tests
// of the inspector drive through the DevTools protocol (chromedp): one
// browser per test binary, shared by its tests, each test in a tab of its
// own. Where Chromium is missing the tests skip and say so, but when
// ENSEMBLE_CI is set (.ci/run installs Debian's chromium), where they fail.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Names are the commands tried, in order, to find Chromium on the PATH.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Timeout bounds what one test does in its tab: generous, since the
// machine the tests run on may be busy (two shared cores), and a test that
// waits for the page waits for an element, never for a duration.
const Timeout = 2 * time.Minute

// ExecPath is the path of the first of Names on the PATH, or "".
func ExecPath() string {
	for _, name := range Names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is a headless Chromium, started once.
type Browser struct {
	ctx     context.Context // the browser's own (first) tab: keeps it alive
	cancel  func()
	dataDir string
}

// Start starts a headless Chromium at path with a fresh profile in a new
// temporary folder. The flags keep it from reaching the network on its own
// (background networking, component updates, sync, QUIC) and from using a
// GPU. It runs without its sandbox when the process is root, where
// Chromium refuses to start with it, and when it does not start with it
// (a container without user namespaces).
func Start(path string) (*Browser, error) {
	root := os.Geteuid() == 0
	b, err := start(path, root)
	if err != nil && !root {
		var err2 error
		if b, err2 = start(path, true); err2 == nil {
			return b, nil
		}
		err = fmt.Errorf("%w; without its sandbox: %w", err, err2)
	}
	return b, err
}

func start(path string, noSandbox bool) (*Browser, error) {
	dir, err := os.MkdirTemp("", "ensemble-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1200, 800),
		chromedp.WSURLReadTimeout(time.Minute),
	)
	if noSandbox {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &Browser{ctx: ctx, dataDir: dir, cancel: func() {
		cancelCtx()
		cancelAlloc()
	}}
	// Do with no action starts the browser and opens its first tab; its
	// context has no deadline, which would end the browser
	// (WSURLReadTimeout bounds the start).
	if err := chromedp.Do(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return b, nil
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() {
	if b == nil {
		return
	}
	b.cancel()
	os.RemoveAll(b.dataDir)
}

// Tab opens a new tab for t, closed when t ends; its context ends after
// Timeout.
func (b *Browser) Tab(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	ctx, cancelTimeout := context.WithTimeout(ctx, Timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	return ctx
}

var shared struct {
	sync.Mutex
	b      *Browser
	err    error
	tried  bool
	closed bool
}

// Shared is the test binary's one browser, started at its first use. It
// skips t where no Chromium is found, and fails it instead when
// ENSEMBLE_CI is set, or when Chromium is found but does not start. A
// package that calls it calls Close from its TestMain after m.Run.
func Shared(t testing.TB) *Browser {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.closed {
		t.Fatal("browsertest: Shared after Close")
	}
	if !shared.tried {
		shared.tried = true
		if path := ExecPath(); path == "" {
			shared.err = errMissing
		} else {
			shared.b, shared.err = Start(path)
		}
	}
	switch {
	case errors.Is(shared.err, errMissing) && os.Getenv("ENSEMBLE_CI") == "":
		t.Skip(shared.err)
	case shared.err != nil:
		t.Fatal(shared.err)
	}
	return shared.b
}

var errMissing = fmt.Errorf("headless Chromium not found on the PATH (none of %v): install Debian's chromium package to run the browser tests", Names)

// Close ends the shared browser, if it was started.
func Close() {
	shared.Lock()
	defer shared.Unlock()
	shared.closed = true
	shared.b.Close()
	shared.b = nil
}
