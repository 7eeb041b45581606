package inspector

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// Graph is a run's agents and edges: from its ensemble file as it loads
// now, or, when the file is gone or no longer loads, the agents its history
// names (without edges).
type Graph struct {
	// Source is "file" or "history".
	Source string `json:"source"`
	// Changed: the file loads, but changed since the run was saved.
	Changed bool `json:"changed,omitempty"`
	// Error says why the file could not be used.
	Error  string       `json:"error,omitempty"`
	Agents []*GraphNode `json:"agents"`
	Edges  []GraphEdge  `json:"edges"`
}

// GraphNode is an agent of a graph. Its status is how its last execution
// ended: completed, failed, skipped, waiting (a question, or requested for
// the next turn) or not_run.
type GraphNode struct {
	Name   string `json:"name"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status"`
	// Layer is its column (layers.go): agents that can run together
	// share one.
	Layer int `json:"layer"`
	// When is its when: guard, "" when it has none.
	When string `json:"when,omitempty"`
	// Executions, Failures and Skips are its records' counts.
	Executions int `json:"executions"`
	Failures   int `json:"failures,omitempty"`
	Skips      int `json:"skips,omitempty"`
	// FanOut marks a fan-out agent; Instances are its instances' names
	// (`name[i]`) that ran.
	FanOut    bool     `json:"fan_out,omitempty"`
	Instances []string `json:"instances,omitempty"`
	// Children are the child ensembles it runs (a dispatch's cases).
	Children []*ChildGraph `json:"children,omitempty"`
	// Last is the execution a node of a child ensemble opens: its agent's
	// last record in the last execution of the agent that runs it.
	Last *ExecutionRef `json:"last,omitempty"`
	// InstanceStatus and InstanceLast are, for a fan-out agent of a child
	// ensemble, how each instance ended and the execution it opens.
	InstanceStatus map[string]string        `json:"instance_status,omitempty"`
	InstanceLast   map[string]*ExecutionRef `json:"instance_last,omitempty"`
}

// ExecutionRef names an execution as GET /api/run/execution takes it.
// For an agent of a child ensemble, Agent is its path (`review/critic`,
// `analyst[1]/think`), Turn the run's turn of the execution that ran the
// child, and N its place among the path's records in that execution (a
// loop's iterations in order), from 1.
type ExecutionRef struct {
	Agent string `json:"agent"`
	N     int    `json:"n"`
	Turn  int    `json:"turn"`
}

// ChildGraph is a child ensemble as the file names it (its agents' runs are
// in the records of the agent that runs it).
type ChildGraph struct {
	Name string `json:"name"`
	// Ran: the last execution of the agent that runs it ran this one (a
	// dispatch runs one of its cases).
	Ran    bool         `json:"ran,omitempty"`
	Agents []*GraphNode `json:"agents"`
	Edges  []GraphEdge  `json:"edges"`
}

// GraphEdge is a dependency: From's output goes to To.
type GraphEdge struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Condition string `json:"condition,omitempty"`
	OnFailure bool   `json:"on_failure,omitempty"`
	OnAlways  bool   `json:"on_always,omitempty"`
	Optional  bool   `json:"optional,omitempty"`
	// Select is what the edge delivers instead of the whole output.
	Select string `json:"select,omitempty"`
	// MaxExecutions is how often it may trigger (0: unlimited).
	MaxExecutions int `json:"max_executions,omitempty"`
	// Back: the edge closes a cycle (a loop), against the layers' order.
	Back bool `json:"back,omitempty"`
}

// graphCacheRow is an ensemble file loaded, by the hash it had.
type graphCacheRow struct {
	sum string
	e   *ensemble.Ensemble
	err error
}

// ensembleOf loads the ensemble file of the run whose head is h, as the
// commands do (session.Load, with the run's profiles files), once per
// version of the file; the secrets its models name join those redacted.
func (s *Server) ensembleOf(h *store.Head) (*ensemble.Ensemble, error) {
	path := h.Ensemble.Path
	if path == "" {
		return nil, errors.New("the run names no ensemble file")
	}
	sum, err := state.HashFile(path)
	if err != nil {
		return nil, err
	}
	ck := path + "\x00" + strings.Join(h.Profiles, "\x00")
	s.mu.Lock()
	row := s.graphs[ck]
	s.mu.Unlock()
	if row != nil && row.sum == sum {
		return row.e, row.err
	}
	e, err := session.Load(path, nil, session.LoadOptions{Profiles: h.Profiles, LookupEnv: s.opts.LookupEnv})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.graphs[ck] = &graphCacheRow{sum: sum, e: e, err: err}
	if e != nil {
		s.addSecrets(e)
	}
	return e, err
}

// addSecrets adds the secrets e and its children name (their profiles'
// keys, their notify and trigger secrets: Ensemble.SecretEnvNames) to those
// every reply redacts; s.mu is held.
func (s *Server) addSecrets(e *ensemble.Ensemble) {
	grew := false
	for _, name := range e.SecretEnvNames() {
		if v, ok := s.opts.LookupEnv(name); ok && v != "" && !s.keys[v] {
			s.keys[v] = true
			grew = true
		}
	}
	if grew {
		s.redact = secrets.New(sortedKeys(s.keys)...)
	}
}

// graphOf is the graph of e (nil: loadErr says why) for the run whose
// head is h and whose agents' totals are tally.
func graphOf(e *ensemble.Ensemble, loadErr error, h *store.Head, tally map[string]*store.AgentTally) *Graph {
	waiting := map[string]bool{}
	for _, p := range h.Pending {
		waiting[p.Target] = true
	}
	node := func(name string) *GraphNode {
		n := &GraphNode{Name: name, Status: "not_run"}
		if t := tally[name]; t != nil {
			n.Executions, n.Failures, n.Skips = t.Executions, t.Failures, t.Skips
			switch t.Last {
			case "ok":
				n.Status = "completed"
			default:
				n.Status = t.Last
			}
		}
		if waiting[name] {
			n.Status = "waiting"
		}
		return n
	}
	instancesOf := func(name string) []string {
		var out []string
		for k := range tally {
			if strings.HasPrefix(k, name+"[") && strings.HasSuffix(k, "]") {
				out = append(out, k)
			}
		}
		slices.SortFunc(out, func(a, b string) int { return instanceNumber(a) - instanceNumber(b) })
		return out
	}
	g := &Graph{Source: "file", Agents: []*GraphNode{}, Edges: []GraphEdge{}}
	if e == nil {
		g.Source = "history"
		if loadErr != nil {
			g.Error = loadErr.Error()
		}
		for _, name := range sortedKeys(tally) {
			if strings.HasSuffix(name, "]") && strings.Contains(name, "[") {
				continue // an instance: under its agent
			}
			n := node(name)
			if inst := instancesOf(name); len(inst) > 0 {
				n.FanOut, n.Instances = true, inst
			}
			g.Agents = append(g.Agents, n)
		}
		// Instances whose agent has no record of its own.
		for _, name := range sortedKeys(tally) {
			if i := strings.LastIndex(name, "["); i > 0 && strings.HasSuffix(name, "]") {
				of := name[:i]
				if !slices.ContainsFunc(g.Agents, func(n *GraphNode) bool { return n.Name == of }) {
					n := node(of)
					n.FanOut, n.Instances = true, instancesOf(of)
					g.Agents = append(g.Agents, n)
				}
			}
		}
		return g
	}
	if h.Ensemble.SHA256 != "" {
		if sum, err := state.HashFile(e.Path); err == nil && sum != h.Ensemble.SHA256 {
			g.Changed = true
		}
	}
	g.Agents, g.Edges = nodesOf(e, node, instancesOf, 0)
	return g
}

// nodesOf are the nodes and edges of e's agents; depth is how deep e is
// among child ensembles (children are drawn three levels deep).
func nodesOf(e *ensemble.Ensemble, node func(string) *GraphNode, instancesOf func(string) []string, depth int) ([]*GraphNode, []GraphEdge) {
	nodes, edges := []*GraphNode{}, []GraphEdge{}
	for _, a := range e.Agents {
		var n *GraphNode
		if depth == 0 {
			n = node(a.Name)
		} else {
			n = &GraphNode{Name: a.Name, Status: "not_run"} // fillChildren says more
		}
		if a.Kind != nil {
			n.Kind = a.Kind.String()
		}
		n.When = a.When
		if a.FanOut != nil {
			n.FanOut = true
			if depth == 0 {
				n.Instances = instancesOf(a.Name)
			}
		}
		if depth < 3 {
			for _, c := range agent.Children(a) {
				cn, ce := nodesOf(c, node, instancesOf, depth+1)
				n.Children = append(n.Children, &ChildGraph{Name: c.Name, Agents: cn, Edges: ce})
			}
		}
		nodes = append(nodes, n)
		for _, d := range a.Dependencies {
			edges = append(edges, GraphEdge{From: d.AgentName, To: a.Name, Condition: d.Condition, OnFailure: d.OnFailure, OnAlways: d.OnAlways, Optional: !d.RequiresAll,
				Select: d.Select, MaxExecutions: d.MaxExecutions})
		}
	}
	layer(nodes, edges)
	return nodes, edges
}

// instanceNumber is i of `name[i]`.
func instanceNumber(name string) int {
	i := strings.LastIndex(name, "[")
	n, _ := strconv.Atoi(strings.TrimSuffix(name[i+1:], "]"))
	return n
}

// fillChildren sets the status and counts of the agents of g's child
// ensembles from last: the records of the last execution of each agent of
// g that runs one (and of each of its instances), by the agent's name.
// What a child's agent did is what it did in those: a loop's iterations,
// every instance of a fan-out.
func fillChildren(g *Graph, last map[string][]*state.Record) {
	for _, n := range g.Agents {
		for _, c := range n.Children {
			var ran []*state.Record
			for _, r := range last[n.Name] {
				if ch := r.Child(); ch != nil && ch.Ensemble == c.Name {
					ran = append(ran, r)
				}
			}
			c.Ran = len(ran) > 0
			fillChild(c.Agents, ran, "")
		}
	}
}

// fillChild fills nodes, the agents of a child ensemble at path rest
// ("" for the first level, "review/" below it) under tops, the records
// that ran it. A fan-out's instances are filled as its instances.
func fillChild(nodes []*GraphNode, tops []*state.Record, rest string) {
	for _, n := range nodes {
		sub := rest + n.Name
		n.Status, n.Executions, n.Failures, n.Skips, n.Last = "not_run", 0, 0, 0, nil
		n.Instances, n.InstanceStatus, n.InstanceLast = nil, nil, nil
		failed := false
		for _, top := range tops {
			path := top.AgentName + "/" + sub
			recs := exactPathRecords([]*state.Record{top}, path)
			for _, r := range recs {
				switch {
				case r.Skipped:
					n.Skips++
				case r.Error != nil:
					n.Executions++
					n.Failures++
				default:
					n.Executions++
				}
			}
			if len(recs) > 0 {
				r := recs[len(recs)-1]
				n.Status = recordStatus(r)
				failed = failed || n.Status == "failed"
				n.Last = &ExecutionRef{Agent: path, N: len(recs), Turn: top.TurnNumber}
			}
			if n.FanOut {
				fillInstances(n, top, path)
			}
		}
		if failed {
			n.Status = "failed"
		}
		for _, c := range n.Children {
			c.Ran = false
			for _, top := range tops {
				for _, r := range agentpath.PathRecords([]*state.Record{top}, top.AgentName+"/"+sub) {
					if ch := r.Child(); ch != nil && ch.Ensemble == c.Name {
						c.Ran = true
					}
				}
			}
			fillChild(c.Agents, tops, sub+"/")
		}
	}
}

// fillInstances adds to n, a fan-out agent of a child ensemble at path
// under top, the instances top ran: their names (`name[i]`), how each
// ended last and the execution each opens.
func fillInstances(n *GraphNode, top *state.Record, path string) {
	for _, r := range agentpath.PathRecords([]*state.Record{top}, path) {
		if r.AgentName == n.Name || !strings.HasPrefix(r.AgentName, n.Name+"[") {
			continue
		}
		if n.InstanceStatus == nil {
			n.InstanceStatus, n.InstanceLast = map[string]string{}, map[string]*ExecutionRef{}
		}
		ip := path + r.AgentName[len(n.Name):]
		if _, ok := n.InstanceStatus[r.AgentName]; !ok {
			n.Instances = append(n.Instances, r.AgentName)
		}
		n.InstanceStatus[r.AgentName] = recordStatus(r)
		last := n.InstanceLast[r.AgentName]
		if last == nil || last.Agent != ip {
			last = &ExecutionRef{Agent: ip, Turn: top.TurnNumber}
			n.InstanceLast[r.AgentName] = last
		}
		last.N++
	}
	slices.SortFunc(n.Instances, func(a, b string) int { return instanceNumber(a) - instanceNumber(b) })
}

// exactPathRecords are the records of the agent at path among recs and
// the runs of the children they ran (agentpath.PathRecords), but those of
// its instances when path's last part names none: what the execution of
// a child's agent is numbered among.
func exactPathRecords(recs []*state.Record, path string) []*state.Record {
	_, name, ok := cutLast(path, "/")
	if !ok {
		name = path
	}
	var out []*state.Record
	for _, r := range agentpath.PathRecords(recs, path) {
		if r.AgentName == name {
			out = append(out, r)
		}
	}
	return out
}

// recordStatus is how a record ended, as a graph node says it.
func recordStatus(r *state.Record) string {
	switch {
	case r.Skipped:
		return "skipped"
	case r.Error != nil:
		return "failed"
	}
	return "completed"
}
