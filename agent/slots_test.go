package agent

import (
	"context"
	"testing"
)

// A tree's slots: a child's lent slot is taken before the pool's, a full
// pool makes Acquire wait until its context ends, and a lent slot given
// back is taken again.
func TestSlots(t *testing.T) {
	t.Parallel()
	top := NewSlots(1)
	give, ok := top.Acquire(context.Background())
	if !ok {
		t.Fatal("no slot in an empty pool")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := top.Acquire(ctx); ok {
		t.Fatal("a slot past the pool's size")
	}
	child := top.Lend()
	own, ok := child.Acquire(context.Background())
	if !ok {
		t.Fatal("the lent slot was not taken")
	}
	if _, ok := child.Acquire(ctx); ok {
		t.Fatal("a second slot for the child while the pool is full")
	}
	own()
	if again, ok := child.Acquire(ctx); !ok {
		t.Fatal("the lent slot given back was not taken again")
	} else {
		again()
	}
	give()
	if g, ok := child.Acquire(context.Background()); !ok {
		t.Fatal("no slot")
	} else {
		g()
	}
}
