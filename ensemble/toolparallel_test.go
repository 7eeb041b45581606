package ensemble_test

import (
	"path/filepath"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds/llm"
)

// tool_parallel is a positive integer of LLM agents, 8 when absent.
func TestToolParallel(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "tool-parallel-ok.yaml", LoadOptions{Kinds: testKinds})
	if got := llm.SpecOf(e.Agent("default")).ToolParallel; got != DefaultToolParallel {
		t.Errorf("default tool_parallel = %d, want %d", got, DefaultToolParallel)
	}
	if got := llm.SpecOf(e.Agent("four")).ToolParallel; got != 4 {
		t.Errorf("tool_parallel = %d, want 4", got)
	}
	file := filepath.Join("testdata", "tool-parallel.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, file,
		`7:20: agent "bad": tool_parallel must be at least 1, got 0`,
		`10:5: agent "script": tool_parallel is only for llm agents`,
	)
}
