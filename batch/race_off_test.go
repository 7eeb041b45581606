//go:build !race

package batch_test

const raceOn = false
