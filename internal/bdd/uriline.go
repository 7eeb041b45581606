package bdd

import (
	"bytes"
	"io"
	"regexp"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/formatters"
)

// godog names a feature file given as FILE:LINE by that whole argument, and
// then places its steps and scenarios after it: "a.feature:8:16" for the
// step at line 16, which reads as a line and a column. The reports name
// the file alone (junit.go: featureFile).

// lineAfterLine is godog's place of a step or scenario of a file given as
// FILE:LINE, in a comment of its pretty and progress formats.
var lineAfterLine = regexp.MustCompile(`(# [^\n#]*\.feature):[0-9]+(:[0-9]+)`)

// dropGivenLine turns "# a.feature:8:16" into "# a.feature:16".
func dropGivenLine(line []byte) []byte {
	return lineAfterLine.ReplaceAll(line, []byte("$1$2"))
}

// cucumberURI is the uri member of godog's Cucumber JSON for a file given
// as FILE:LINE.
var cucumberURI = regexp.MustCompile(`(?m)^(\s*"uri": ".*\.feature):[0-9]+(",?\r?)$`)

// cucumberFormat is bdd's Cucumber JSON: godog's, whose features' uri is
// the file alone.
const cucumberFormat = "ensemble-cucumber"

func init() {
	cucumber := godog.FindFmt("cucumber")
	godog.Format(cucumberFormat, "godog's Cucumber JSON, each feature's uri its file", func(suite string, out io.Writer) formatters.Formatter {
		// godog writes the JSON at the end, ending with a newline: nothing
		// is left in the filter.
		return cucumber(suite, &uriFilter{w: out})
	})
}

// uriFilter writes each complete line as it comes, a feature's uri its
// file.
type uriFilter struct {
	w   io.Writer
	buf []byte
}

func (f *uriFilter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	i := bytes.LastIndexByte(f.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	_, err := f.w.Write(cucumberURI.ReplaceAll(f.buf[:i+1], []byte("$1$2")))
	f.buf = append(f.buf[:0], f.buf[i+1:]...)
	return len(p), err
}
