package durable

// SwapTemporal makes open the Temporal engine until restore is called
// (tests of a program with and without one).
func SwapTemporal(open func(RemoteSpec, Temporal) (Player, error)) (restore func()) {
	temporalMu.Lock()
	old := temporalOpen
	temporalOpen = open
	temporalMu.Unlock()
	return func() {
		temporalMu.Lock()
		temporalOpen = old
		temporalMu.Unlock()
	}
}
