package ensemble_test

import (
	"errors"
	"fmt"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
)

func ExampleLoad() {
	e, err := ensemble.Load("testdata/iterative-analysis/ensemble.yaml", kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range e.Agents {
		fmt.Printf("%s (%s), max_turns %d\n", a.Name, a.Kind, a.Conversation.MaxTurns)
	}
	fmt.Println("turn limit:", e.Limits.MaxTotalTurns, "timeout:", e.Limits.Timeout)
	// Output:
	// data_extractor (script), max_turns 1
	// llm_analyzer (llm), max_turns 3
	// user_clarification (ask), max_turns 3
	// final_synthesis (llm), max_turns 1
	// turn limit: 15 timeout: 10m0s
}

func ExampleErrorList_Pretty() {
	_, err := ensemble.Load("testdata/example-typo.yaml", kinds.Builtin().Load(ensemble.LoadOptions{}))
	var list *ensemble.ErrorList
	if errors.As(err, &list) {
		fmt.Println(list.Pretty())
	}
	// Output:
	// testdata/example-typo.yaml:7:5: unknown key "dependecies" in agent "reviewer"; did you mean "dependencies"?
	//     7 |     dependecies: [writer]
	//       |     ^
	// testdata/example-typo.yaml:8:31: conversation of agent "reviewer": max_turns must be at least 1, got 0
	//     8 |     conversation: {max_turns: 0}
	//       |                               ^
}
