package a2aserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/ensemble-run/ensemble/store"
)

// taskStore is the SDK's task store over the state database (store's
// a2a_tasks): a task written whole, with a version that an update must
// name (a stale writer is refused with taskstore.ErrConcurrentModification,
// never merged). A task no execution of this process follows is brought
// to what its run says when it is read (reconcile): its run may have gone
// on through another door (the run API, the inspector, an answer link), or
// after a restart.
type taskStore struct{ x *adapter }

var _ taskstore.Store = (*taskStore)(nil)

func (s *taskStore) db(f func(db *store.DB) error) error { return s.x.runs.WithDB(f) }

func rowOf(t *a2a.Task) (store.Task, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return store.Task{}, err
	}
	return store.Task{ID: string(t.ID), ContextID: t.ContextID, State: string(t.Status.State), Body: b, Updated: time.Now()}, nil
}

func taskOf(r store.Task) (*a2a.Task, error) {
	var t a2a.Task
	if err := json.Unmarshal(r.Body, &t); err != nil {
		return nil, fmt.Errorf("task %s: %w", r.ID, err)
	}
	return &t, nil
}

func (s *taskStore) Create(ctx context.Context, t *a2a.Task) (taskstore.TaskVersion, error) {
	row, err := rowOf(t)
	if err != nil {
		return 0, err
	}
	var v int64
	err = s.db(func(db *store.DB) error {
		v, err = db.CreateTask(row)
		return err
	})
	if errors.Is(err, store.ErrTaskExists) {
		return 0, taskstore.ErrTaskAlreadyExists
	}
	return taskstore.TaskVersion(v), err
}

func (s *taskStore) Update(ctx context.Context, u *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	row, err := rowOf(u.Task)
	if err != nil {
		return 0, err
	}
	var v int64
	err = s.db(func(db *store.DB) error {
		v, err = db.UpdateTask(row, int64(u.PrevVersion))
		return err
	})
	switch {
	case errors.Is(err, store.ErrStaleTask):
		return 0, taskstore.ErrConcurrentModification
	case errors.Is(err, store.ErrNoTask):
		return 0, a2a.ErrTaskNotFound
	}
	return taskstore.TaskVersion(v), err
}

// raw is the task as stored, without reconciling it.
func (s *taskStore) raw(id a2a.TaskID) (*taskstore.StoredTask, error) {
	var row store.Task
	err := s.db(func(db *store.DB) (err error) {
		row, err = db.TaskByID(string(id))
		return err
	})
	if errors.Is(err, store.ErrNoTask) {
		return nil, a2a.ErrTaskNotFound
	}
	if err != nil {
		return nil, err
	}
	t, err := taskOf(row)
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: t, Version: taskstore.TaskVersion(row.Version)}, nil
}

func (s *taskStore) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	st, err := s.raw(id)
	if err != nil {
		return nil, err
	}
	st, _ = s.reconcile(st)
	return st, nil
}

// reconcile brings st to what its run says, unless an execution of this
// process follows the run (it writes the task itself) or the run says
// what st does; the task so written gets the next version (changed).
// What cannot be read or written leaves st as it is.
func (s *taskStore) reconcile(st *taskstore.StoredTask) (_ *taskstore.StoredTask, changed bool) {
	id := string(st.Task.ID)
	if s.x.followed(id) {
		return st, false
	}
	v, err := s.x.view(id)
	if err != nil {
		return st, false
	}
	t := *st.Task
	if v.state == t.Status.State && (v.state != a2a.TaskStateInputRequired || turnAsked(&t) == questionTurn(v)) &&
		(v.state != a2a.TaskStateCompleted || len(t.Artifacts) > 0) {
		return st, false
	}
	t.Status = s.x.status(&t, v)
	if v.state.Terminal() && v.state != a2a.TaskStateCanceled {
		t.Artifacts = []*a2a.Artifact{s.x.resultArtifact(id, v.res)}
	}
	next, err := s.Update(context.Background(), &taskstore.UpdateRequest{Task: &t, PrevTask: st.Task, PrevVersion: st.Version})
	if err != nil {
		if again, err := s.raw(st.Task.ID); err == nil {
			return again, false // another writer won: what it wrote
		}
		return st, false
	}
	return &taskstore.StoredTask{Task: &t, Version: next}, true
}

// caughtUp brings the task of run id, if it has one, to what the run
// says once it ended or suspended (serve.Runs.OnEnd), and pushes the task
// to its push configs when that changed it: a run answered or cancelled
// through another door notifies as one that went on through A2A.
func (s *taskStore) caughtUp(id string) {
	st, err := s.raw(a2a.TaskID(id))
	if err != nil {
		return // no task: a run of another door
	}
	st, changed := s.reconcile(st)
	if !changed {
		return
	}
	configs, err := (&pushStore{x: s.x}).List(context.Background(), st.Task.ID)
	if err != nil {
		return
	}
	for _, c := range configs {
		(&pushSender{x: s.x}).SendPush(context.Background(), c, st.Task)
	}
}

// questionTurn is the turn of the questions a run waits for.
func questionTurn(v *runView) int {
	if len(v.questions) == 0 {
		return 0
	}
	return v.questions[0].Turn
}

func (s *taskStore) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	size := req.PageSize
	if size == 0 {
		size = 50
	}
	if size < 1 || size > 100 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageSize must be 1 to 100, got %d", req.PageSize))
	}
	var rows []store.Task
	var next string
	var total int
	err := s.db(func(db *store.DB) (err error) {
		rows, next, total, err = db.Tasks(req.ContextID, string(req.Status), req.PageToken, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, TotalSize: total, PageSize: size, NextPageToken: next}
	for _, r := range rows {
		t, err := taskOf(r)
		if err != nil {
			return nil, err
		}
		st, _ := s.reconcile(&taskstore.StoredTask{Task: t, Version: taskstore.TaskVersion(r.Version)})
		t = st.Task
		if req.StatusTimestampAfter != nil && (t.Status.Timestamp == nil || !t.Status.Timestamp.After(*req.StatusTimestampAfter)) {
			continue
		}
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		if req.HistoryLength != nil {
			n := max(0, *req.HistoryLength)
			t.History = t.History[max(0, len(t.History)-n):]
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}
