package a2aserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"

	"github.com/ensemble-run/ensemble/store"
)

// pushStore keeps a task's push notification configs in the state
// database (store's a2a_push), so that they outlive the server. A config
// is taken as a run's webhook is: an http(s) URL, and only when
// $ENSEMBLE_WEBHOOK_SECRET signs the deliveries.
type pushStore struct{ x *adapter }

var _ push.ConfigStore = (*pushStore)(nil)

func (s *pushStore) Save(ctx context.Context, taskID a2a.TaskID, c *a2a.PushConfig) (*a2a.PushConfig, error) {
	if c == nil || c.URL == "" {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "a push notification config needs a url")
	}
	if err := s.x.runs.CheckWebhook(c.URL); err != nil {
		return nil, s.x.asError(err)
	}
	out := *c
	out.TaskID = taskID
	if out.ID == "" {
		var b [12]byte
		rand.Read(b[:])
		out.ID = hex.EncodeToString(b[:])
	}
	body, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	full := false
	err = s.x.runs.WithDB(func(db *store.DB) error {
		have, err := db.Pushes(string(taskID))
		if err != nil {
			return err
		}
		if _, replaced := have[out.ID]; !replaced && len(have) >= maxPushConfigs {
			full = true
			return nil
		}
		return db.SavePush(string(taskID), out.ID, body)
	})
	if err != nil {
		return nil, err
	}
	if full {
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a task takes %d push notification configs at most: delete one first", maxPushConfigs))
	}
	return &out, nil
}

// maxPushConfigs bounds the push notification configs of a task: each
// event of the task is posted to each of them, so that without a bound one
// request could make the server post every event to thousands of URLs.
const maxPushConfigs = 16

func (s *pushStore) Get(ctx context.Context, taskID a2a.TaskID, id string) (*a2a.PushConfig, error) {
	list, err := s.List(ctx, taskID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(c *a2a.PushConfig) bool { return c.ID == id })
	if i < 0 {
		return nil, push.ErrPushConfigNotFound
	}
	return list[i], nil
}

func (s *pushStore) List(ctx context.Context, taskID a2a.TaskID) ([]*a2a.PushConfig, error) {
	var m map[string][]byte
	err := s.x.runs.WithDB(func(db *store.DB) (err error) {
		m, err = db.Pushes(string(taskID))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := []*a2a.PushConfig{}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		var c a2a.PushConfig
		if err := json.Unmarshal(m[id], &c); err != nil {
			return nil, errors.New("push config " + id + ": " + err.Error())
		}
		out = append(out, &c)
	}
	return out, nil
}

func (s *pushStore) Delete(ctx context.Context, taskID a2a.TaskID, id string) error {
	return s.x.runs.WithDB(func(db *store.DB) error { return db.DeletePush(string(taskID), id) })
}

func (s *pushStore) DeleteAll(ctx context.Context, taskID a2a.TaskID) error {
	return s.Delete(ctx, taskID, "")
}

// pushSender delivers each event of a task to its configs as a run's
// webhook is delivered (serve.Runs.Deliver): the event's JSON (a
// StreamResponse, as the SDK's own sender posts it), signed in
// X-Ensemble-Signature, retried with backoff, each attempt recorded in
// the run's events, in order; the config's token goes in
// A2A-Notification-Token and its credentials in Authorization.
type pushSender struct{ x *adapter }

var _ push.Sender = (*pushSender)(nil)

func (s *pushSender) SendPush(ctx context.Context, c *a2a.PushConfig, ev a2a.Event) error {
	body, err := json.Marshal(a2a.StreamResponse{Event: ev})
	if err != nil {
		return err
	}
	h := http.Header{}
	if c.Token != "" {
		h.Set("A2A-Notification-Token", c.Token)
	}
	if c.Auth != nil && c.Auth.Credentials != "" {
		switch strings.ToLower(c.Auth.Scheme) {
		case "bearer":
			h.Set("Authorization", "Bearer "+c.Auth.Credentials)
		case "basic":
			h.Set("Authorization", "Basic "+c.Auth.Credentials)
		}
	}
	// Not delivered (the secret was unset since, or the server is
	// closing): the task goes on all the same.
	_ = s.x.runs.Deliver(string(ev.TaskInfo().TaskID), c.URL, body, h)
	return nil
}
