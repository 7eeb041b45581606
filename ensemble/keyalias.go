package ensemble

// keyAliases are keys a user is likely to write for a key of another
// name, too far from it in spelling for the "did you mean" of a typo:
// max_turns in conversation_limits would otherwise suggest max_tokens, a
// budget, where the turn limit is meant. Each applies only where the key
// it names is known.
var keyAliases = map[string]string{
	"max_turns":      "max_total_turns",
	"max_turn":       "max_total_turns",
	"turns":          "max_total_turns",
	"timeout":        "timeout_seconds",
	"parallel":       "parallel_agent_limit",
	"max_parallel":   "parallel_agent_limit",
	"max_executions": "max_agent_executions",
}
