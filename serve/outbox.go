package serve

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// The outbox keeps every delivery (a run's webhook, an ask agent's
// notification, an A2A push) that is not done yet as a file of the
// journal's outbox folder: written before its first attempt, its count of
// attempts updated after each failure, removed once it is delivered or
// given up. A server stopped meanwhile (a restart, a crash) goes on with
// them when it starts again (recover), with the attempts they have left,
// so that a person away from the terminal is still told a run waits.
//
// What a file holds is what a delivery needs that the server cannot make
// again: the redacted body, the target, the headers of an A2A push (its
// config's token, as the push configs are stored). Secrets stay in the
// environment and are looked up again: the variable that signs it, and
// for a Slack notification the variable that holds the webhook's URL,
// which is itself a secret.
type outgoing struct {
	Seq       int64           `json:"seq"`
	Run       string          `json:"run"`
	URL       string          `json:"url,omitempty"`        // the target, unless URLEnv
	URLEnv    string          `json:"url_env,omitempty"`    // the variable that holds the target
	SecretEnv string          `json:"secret_env,omitempty"` // the variable whose value signs it; "": unsigned
	Header    http.Header     `json:"header,omitempty"`
	Body      json.RawMessage `json:"body"`
	Attempts  int             `json:"attempts"` // made already
}

// maxOutgoing caps what is read of an outbox file.
const maxOutgoing = 64 << 20

// outboxSeq orders the deliveries: the nanoseconds of their making, one
// more than the last when the clock gives the same.
var outboxSeq atomic.Int64

func nextSeq() int64 {
	for {
		last, now := outboxSeq.Load(), time.Now().UnixNano()
		next := max(now, last+1)
		if outboxSeq.CompareAndSwap(last, next) {
			return next
		}
	}
}

func (rs *Runs) outboxDir() string { return filepath.Join(rs.j.dir, "outbox") }

func (rs *Runs) outboxPath(p *outgoing) string {
	return filepath.Join(rs.outboxDir(), fmt.Sprintf("%020d.json", p.Seq))
}

// keep writes p to the outbox (0600: it may hold an A2A push's token),
// through a temporary file so that a crash never leaves half of it.
func (rs *Runs) keep(p *outgoing) {
	if p.Seq == 0 {
		p.Seq = nextSeq()
	}
	b, err := json.Marshal(p)
	if err == nil {
		err = os.MkdirAll(rs.outboxDir(), 0o700)
	}
	if err == nil {
		tmp := rs.outboxPath(p) + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, rs.outboxPath(p))
		}
	}
	if err != nil {
		rs.logf("run %s: a delivery is not kept for a restart: %s", p.Run, err)
	}
}

// drop removes p from the outbox: delivered, or given up.
func (rs *Runs) drop(p *outgoing) {
	if err := os.Remove(rs.outboxPath(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
		rs.logf("run %s: %s", p.Run, err)
	}
}

// send delivers p (kept in the outbox until it is done) and records each
// attempt in its run's events.
func (rs *Runs) send(p *outgoing) {
	rs.keep(p)
	sink := rs.sink(p.Run)
	target, secret, scrub, err := rs.resolve(p)
	if err != nil {
		sink.Emit(events.Event{Type: WebhookFailed, Attempt: p.Attempts + 1, Error: err.Error() + ": giving up"})
		rs.drop(p)
		return
	}
	if rs.deliverWith(p, target, secret, sink, scrub) {
		rs.drop(p)
	}
}

// resolve looks up what p's file does not hold: its target when a
// variable holds it, the secret that signs it.
func (rs *Runs) resolve(p *outgoing) (target string, secret []byte, scrub func(string) string, err error) {
	target, scrub = p.URL, func(s string) string { return s }
	if p.URLEnv != "" {
		if target, _ = rs.o.LookupEnv(p.URLEnv); target == "" {
			return "", nil, nil, fmt.Errorf("$%s, the target's URL, is not set", p.URLEnv)
		}
		scrub = func(s string) string { return strings.ReplaceAll(s, target, "$"+p.URLEnv) }
	}
	if p.SecretEnv != "" {
		v, _ := rs.o.LookupEnv(p.SecretEnv)
		if v == "" {
			return "", nil, nil, fmt.Errorf("$%s is not set, and deliveries are never sent unsigned", p.SecretEnv)
		}
		secret = []byte(v)
	}
	return target, secret, scrub, nil
}

// resumeDeliveries goes on with the deliveries a stopped server left in
// the outbox, those of one run one after the other, in the order they
// were made.
func (rs *Runs) resumeDeliveries() {
	entries, err := os.ReadDir(rs.outboxDir())
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			rs.logf("the deliveries left by the last server: %s", err)
		}
		return
	}
	byRun := map[string][]*outgoing{}
	var order []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			os.Remove(filepath.Join(rs.outboxDir(), name)) // a write a crash cut short
			continue
		}
		p, err := readOutgoing(filepath.Join(rs.outboxDir(), name))
		if err != nil {
			rs.logf("a delivery left by the last server is lost: %s", err)
			os.Remove(filepath.Join(rs.outboxDir(), name))
			continue
		}
		outboxSeq.Store(max(outboxSeq.Load(), p.Seq))
		if _, ok := byRun[p.Run]; !ok {
			order = append(order, p.Run)
		}
		byRun[p.Run] = append(byRun[p.Run], p)
	}
	for _, run := range order {
		list := byRun[run]
		slices.SortFunc(list, func(a, b *outgoing) int { return cmp.Compare(a.Seq, b.Seq) })
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			for _, p := range list {
				if rs.ctx.Err() != nil {
					return
				}
				rs.send(p)
			}
		}()
	}
}

func readOutgoing(path string) (*outgoing, error) {
	b, err := readcap.ReadFile(path, maxOutgoing)
	if err != nil {
		return nil, err
	}
	var p outgoing
	if err := json.Unmarshal(b, &p); err != nil || p.Run == "" || p.Seq == 0 {
		return nil, fmt.Errorf("%s: not a delivery", path)
	}
	return &p, nil
}
