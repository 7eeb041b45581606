package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestTaskRowsAreVersioned(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), true, SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.InitTasks(); err != nil {
		t.Fatal(err)
	}
	if err := db.InitTasks(); err != nil { // a second time: nothing to do
		t.Fatal(err)
	}
	now := time.Now()
	for _, id := range []string{"b", "a", "c"} {
		if v, err := db.CreateTask(Task{ID: id, ContextID: "ctx", State: "WORKING", Body: []byte(`{"n":1}`), Updated: now}); err != nil || v != 1 {
			t.Fatalf("CreateTask %s: %d %v", id, v, err)
		}
	}
	if _, err := db.CreateTask(Task{ID: "a", ContextID: "x", Body: []byte("{}")}); !errors.Is(err, ErrTaskExists) {
		t.Errorf("a second CreateTask: %v", err)
	}
	if v, err := db.UpdateTask(Task{ID: "a", ContextID: "ctx", State: "DONE", Body: []byte(`{"n":2}`)}, 1); err != nil || v != 2 {
		t.Fatalf("UpdateTask: %d %v", v, err)
	}
	if _, err := db.UpdateTask(Task{ID: "a", ContextID: "ctx", State: "STALE", Body: []byte(`{"n":3}`)}, 1); !errors.Is(err, ErrStaleTask) {
		t.Errorf("a stale UpdateTask: %v", err)
	}
	if _, err := db.UpdateTask(Task{ID: "z", Body: []byte("{}")}, 1); !errors.Is(err, ErrNoTask) {
		t.Errorf("UpdateTask of no task: %v", err)
	}
	got, err := db.TaskByID("a")
	if err != nil || got.Version != 2 || got.State != "DONE" || string(got.Body) != `{"n":2}` {
		t.Errorf("TaskByID: %+v %v", got, err)
	}
	if _, err := db.TaskByID("z"); !errors.Is(err, ErrNoTask) {
		t.Errorf("TaskByID of no task: %v", err)
	}
	page, next, total, err := db.Tasks("ctx", "", "", 2)
	if err != nil || len(page) != 2 || page[0].ID != "a" || page[1].ID != "b" || next != "b" || total != 3 {
		t.Fatalf("Tasks: %+v %q %d %v", page, next, total, err)
	}
	page, next, _, err = db.Tasks("ctx", "", next, 2)
	if err != nil || len(page) != 1 || page[0].ID != "c" || next != "" {
		t.Errorf("the next page: %+v %q %v", page, next, err)
	}
	if page, _, total, _ := db.Tasks("", "DONE", "", 10); len(page) != 1 || total != 1 {
		t.Errorf("Tasks by state: %+v", page)
	}
	if err := db.SavePush("a", "p1", []byte(`{"url":"u1"}`)); err != nil {
		t.Fatal(err)
	}
	db.SavePush("a", "p2", []byte(`{"url":"u2"}`))
	db.SavePush("a", "p1", []byte(`{"url":"u3"}`))
	if m, err := db.Pushes("a"); err != nil || len(m) != 2 || string(m["p1"]) != `{"url":"u3"}` {
		t.Errorf("Pushes: %v %v", m, err)
	}
	db.DeletePush("a", "p1")
	if m, _ := db.Pushes("a"); len(m) != 1 {
		t.Errorf("after DeletePush: %v", m)
	}
	db.DeletePush("a", "")
	if m, _ := db.Pushes("a"); len(m) != 0 {
		t.Errorf("after deleting all: %v", m)
	}
}
