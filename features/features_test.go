package features

import (
	"context"
	"testing"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/kinds/llm"
)

func TestFeatures(t *testing.T) {
	suite := godog.TestSuite{
		Name: "ensemble",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			// Fresh per scenario: the fake model, its script and the run.
			fm := newFakeModel(t)
			models := llm.New(llm.Options{
				HTTPClient: fm.srv.Client(),
				LookupEnv:  fm.lookupEnv,
				MaxRetries: -1,
			})
			bdd.Register(sc, bdd.Options{
				LookupEnv: fm.lookupEnv,
				LLM:       models,
				Simulate:  models.Simulate,
			})
			fm.register(sc)
			sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
				fm.close()
				return ctx, nil
			})
		},
		Options: &godog.Options{
			Format: "pretty",
			// Under testdata/, so that `ensemble test` never picks up
			// this suite: its fake model's steps are Go code.
			Paths:    []string{"testdata"},
			Strict:   true,
			NoColors: true,
			TestingT: t,
			// Scenarios are independent (each has its own fake model,
			// run and folder) and mostly wait on the scripts they
			// spawn, so several run at once: the suite takes a
			// fraction of its sequential time, even on 2 cores.
			// Each scenario's output is printed whole when it ends.
			Concurrency: 4,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("the feature suite failed")
	}
}
