package ensemble

// Suggest returns `; did you mean "x"?` for the candidate closest to s, or ""
// when none is close: the hint of every "unknown name" message.
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }

// AgentNames lists the agents' names in file order.
func (e *Ensemble) AgentNames() []string {
	names := make([]string, len(e.Agents))
	for i, a := range e.Agents {
		names[i] = a.Name
	}
	return names
}
