package conditions

import (
	"context"
)

// requestEnv is the names a request template may use: an HTTP request's
// body (its JSON decoded, or its text when it is not JSON) and headers
// (each name in lower case, its value the first one sent).
type requestEnv struct {
	Body    any            `expr:"body"`
	Headers map[string]any `expr:"headers"`
}

// requestEvalEnv is requestEnv with the evaluation's meter, as evalEnv is
// Env.
type requestEvalEnv struct {
	requestEnv
	m *meter
}

// CompileRequestTemplate compiles src as a template whose placeholders
// read an HTTP request instead of a run's state: body and headers (a
// trigger's webhook input). Problems are *CompileError values as
// CompileTemplate's; an unknown name is one.
func CompileRequestTemplate(src string) (*Template, error) {
	return compileTemplate(src, false, true, requestEnv{}, &requestEvalEnv{})
}

// EvalRequest renders a template of CompileRequestTemplate over a
// request's body and headers, within the budgets of one condition, as
// EvalContext does.
func (t *Template) EvalRequest(ctx context.Context, body any, headers map[string]any) (any, error) {
	if !t.request {
		return nil, &RuntimeError{Msg: "only a request template is evaluated with EvalRequest", What: templateWhat}
	}
	return t.eval(func(p *Program, left *meter, memory uint) (result any, err error) {
		r, err := runnerFor(ctx, "")
		if err != nil {
			return nil, err
		}
		defer recovered(&result, &err, "")
		env := &requestEvalEnv{requestEnv: requestEnv{Body: body, Headers: headers}, m: &r.meter}
		return r.runMetered(ctx, p, env, left, memory, nil)
	})
}
