package bdd

import (
	"bufio"
	"bytes"
)

// maxFeatureLine is the longest line of a feature file: the Gherkin
// parser reads lines with a bufio.Scanner of the default size, and a
// longer line made it panic.
const maxFeatureLine = bufio.MaxScanTokenSize - 1

// utf8BOM is the byte order mark some editors write at the start of a
// UTF-8 file; the Gherkin parser takes it for text, and finds no Feature.
var utf8BOM = []byte("\xef\xbb\xbf")

// longLine is the number (from 1) of the first line of data longer than
// maxFeatureLine, its newline left out; 0 when none is.
func longLine(data []byte) int {
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		if i > maxFeatureLine {
			return n
		}
		data = data[min(i+1, len(data)):]
	}
	return 0
}
