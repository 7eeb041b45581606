package bdd

import (
	"os"
	"path/filepath"
	"strings"
)

// checkReportFiles refuses a report file of a --format value that would
// overwrite what the test reads: one of its feature files, its --state
// database, or any existing .feature or YAML file (an ensemble, its
// responses or profiles: no report is written as YAML). The report files
// are created before anything runs, so the file would be lost at once.
func checkReportFiles(format string, features []string, state string) error {
	parts, err := checkFormatNames(format)
	if err != nil {
		return err
	}
	for _, p := range parts {
		name, file, hasFile := strings.Cut(p, ":")
		if !hasFile {
			continue
		}
		if what := readByTest(file, features, state); what != "" {
			return usagef("format %s: %s is %s: the report would overwrite it; give it a file of its own", name, file, what)
		}
	}
	return nil
}

// readByTest says what file is to the test ("a feature file", ...), or ""
// when it is none of what the test reads.
func readByTest(file string, features []string, state string) string {
	fi, err := os.Stat(file)
	if err != nil {
		return "" // a new file
	}
	same := func(p string) bool {
		st, err := os.Stat(lineSuffix.ReplaceAllString(p, ""))
		return err == nil && os.SameFile(fi, st)
	}
	for _, f := range features {
		if same(f) {
			return "a feature file of the test"
		}
	}
	if state != "" && same(state) {
		return "the --state database"
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".feature":
		return "a feature file"
	case ".yaml", ".yml":
		return "a YAML file (an ensemble, responses or profiles file)"
	}
	return ""
}
