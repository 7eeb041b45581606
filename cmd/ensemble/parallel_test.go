package main

import (
	"flag"
	"runtime"
	"strconv"
)

// parallelPerCPU is how many of this package's parallel tests run at once
// per CPU, unless -test.parallel says otherwise.
const parallelPerCPU = 4

// widenParallel lets more of this package's tests run at once than go
// test's default (one per CPU), unless -test.parallel was given: most of
// their time is spent waiting, on the processes they start (the CLI, the
// examples' scripts, node) and on those processes' timers, and a test
// that waits holds a slot the next one could use. On a busy machine, where
// the CPU is shared among the runnable processes, a package with two at a
// time also gets little of it.
func widenParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelPerCPU*runtime.GOMAXPROCS(0)))
	}
}
