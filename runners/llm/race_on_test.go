//go:build race

package llm

// raceEnabled: timing budgets do not apply under the race detector.
const raceEnabled = true
