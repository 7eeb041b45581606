package agent

import "sync"

// ChildRun is one run of a child ensemble (Request.ChildRun): what runners
// keep for it, by key. Safe for concurrent use.
type ChildRun struct {
	mu   sync.Mutex
	vals map[string]int
}

// Once is the value kept under key: the first call sets it to first()'s,
// and every later call returns that.
func (c *ChildRun) Once(key string, first func() int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.vals[key]; ok {
		return v
	}
	if c.vals == nil {
		c.vals = map[string]int{}
	}
	v := first()
	c.vals[key] = v
	return v
}
