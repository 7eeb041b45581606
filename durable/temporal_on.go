//go:build !notemporal

package durable

import "errors"

// ErrNoTemporal refuses a run on Temporal in a program that has not
// imported the engine (package temporalengine, which registers itself).
var ErrNoTemporal = errors.New("this program has no Temporal engine: it does not import package github.com/ensemble-run/ensemble/temporalengine")
