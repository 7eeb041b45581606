package opaque_test

import (
	"testing"

	"github.com/ensemble-run/ensemble/internal/opaque"
)

type handle opaque.Of[*int]

func TestMakeGet(t *testing.T) {
	t.Parallel()
	n := 7
	h := opaque.Make[handle](&n)
	if got := opaque.Get(h); got != &n {
		t.Fatalf("Get = %v, want %v", got, &n)
	}
	if got := opaque.Get(handle{}); got != nil || h == (handle{}) {
		t.Fatalf("the zero handle holds %v; a made one equals the zero one: %v", got, h == (handle{}))
	}
}
