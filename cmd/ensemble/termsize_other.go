//go:build !(linux || darwin)

package main

import "os"

// terminalColumns is unknown here: the caller falls back to $COLUMNS or 80.
func terminalColumns(*os.File) int { return 0 }
