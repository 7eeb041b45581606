package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// Resources: each ensemble's file, ensemble://ensemble/NAME, and, on a
// door that keeps its runs, each run's result JSON,
// ensemble://run/RUN_ID (a resource template).

// maxFile caps an ensemble file read as a resource.
const maxFile = 1 << 20

// maxListed is how many runs resources/list lists (the last ones); any
// other is read by its URI all the same.
const maxListed = 200

// ensembleURI is the resource of e's file.
func ensembleURI(name string) string { return "ensemble://ensemble/" + name }

// runURIPrefix begins the resource of a run's result.
const runURIPrefix = "ensemble://run/"

func (d *door) addResources(server *mcp.Server, list []*ensemble.Ensemble) {
	for _, e := range list {
		server.AddResource(&mcp.Resource{URI: ensembleURI(e.Name), Name: e.Name, MIMEType: "application/yaml",
			Description: "The ensemble file of " + e.Name + "."},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				b, err := readcap.ReadTextFile(e.Path, maxFile)
				if err != nil {
					return nil, fmt.Errorf("ensemble %s: %v", e.Name, err)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
					{URI: req.Params.URI, MIMEType: "application/yaml", Text: string(b)}}}, nil
			})
	}
	if d.keep == nil {
		return
	}
	// The runs are listed after the files, on the last page of
	// resources/list: the last maxListed of them.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListResourcesResult)
			if err != nil || method != "resources/list" || !ok || lr.NextCursor != "" {
				return res, err
			}
			runs, err := d.keep.Recent(maxListed)
			if err != nil {
				return res, nil // the files still are
			}
			for _, r := range runs {
				lr.Resources = append(lr.Resources, &mcp.Resource{URI: runURIPrefix + r.ID, Name: "run " + r.ID,
					MIMEType: "application/json", Description: fmt.Sprintf("A run of %s (%s): its result JSON.", r.Ensemble, r.Status)})
			}
			return lr, nil
		}
	})
	server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: runURIPrefix + "{run_id}", Name: "run",
		MIMEType: "application/json", Description: "The result JSON of a run, as `state show` prints it."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, ok := strings.CutPrefix(req.Params.URI, runURIPrefix)
			if !ok || id == "" {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			b, err := d.keep.ResultJSON(id)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

// addRunTools adds ensemble_answer and ensemble_status, which continue
// and read a run that a suspended result named.
func (d *door) addRunTools(server *mcp.Server) {
	runID := map[string]any{"type": "string", "description": "the run's id (run_id of a suspended result)"}
	server.AddTool(&mcp.Tool{
		Name: "ensemble_answer",
		Description: "Answers the question a run waits on (a suspended result of an ensemble's tool: its run_id and agent), " +
			"then follows the run: returns what the ensemble's tool returns.",
		InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"run_id", "agent", "answer"},
			"properties": map[string]any{"run_id": runID,
				"agent":  map[string]any{"type": "string", "description": "the agent that asks"},
				"answer": map[string]any{"type": "string", "description": "the answer: one line of text (JSON text gives a value)"}}},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ RunID, Agent, Answer string }
		if err := unmarshalArgs(req, &args); err != nil {
			return errorResult(err.Error()), nil
		}
		if args.RunID == "" || args.Agent == "" {
			return errorResult("invalid arguments: run_id and agent are required"), nil
		}
		progress := d.progress(ctx, req)
		out, err := d.keep.Answer(ctx, args.RunID, args.Agent, args.Answer, progress)
		if err != nil {
			return d.errorResult(err), nil
		}
		return d.finish(ctx, req, out, progress)
	})
	server.AddTool(&mcp.Tool{
		Name: "ensemble_status",
		Description: "A run as it is now: its output or result when it has ended, the question it waits on (suspended), " +
			"or that it goes on.",
		InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"run_id"},
			"properties": map[string]any{"run_id": runID}},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ RunID string }
		if err := unmarshalArgs(req, &args); err != nil {
			return errorResult(err.Error()), nil
		}
		out, err := d.keep.Status(args.RunID)
		if err != nil {
			return d.errorResult(err), nil
		}
		return d.result(out), nil
	})
}

// unmarshalArgs decodes a call's arguments (run_id, agent, answer).
func unmarshalArgs(req *mcp.CallToolRequest, v any) error {
	var raw struct {
		RunID  *string `json:"run_id"`
		Agent  *string `json:"agent"`
		Answer *string `json:"answer"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &raw); err != nil {
			return fmt.Errorf("invalid arguments: %v", err)
		}
	}
	b, _ := json.Marshal(map[string]any{"RunID": deref(raw.RunID), "Agent": deref(raw.Agent), "Answer": deref(raw.Answer)})
	return json.Unmarshal(b, v)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
