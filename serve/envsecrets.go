package serve

// The secrets of the server itself: every variable that holds a key or a
// secret of any served file, and the server's own. None is handed to the
// runs' scripts and MCP servers, and their values are redacted from every
// answer, as a run's own keys are.

import (
	"os"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds/ask"
)

// secretNames lists the variables that hold a secret of the server: its
// token, the secret its webhooks are signed with, and of every file served
// its profiles' api_key_env, its webhook triggers' secret_env and its ask
// agents' notify secret_env and slack_env. A session strips only its own
// file's keys from its scripts' environment: a script of one file would
// read another's key, or the secret that lets anyone start runs through a
// trigger.
func secretNames(list []*served) []string {
	names := []string{TokenEnv, WebhookSecretEnv}
	for _, sv := range list {
		names = append(names, sv.e.SecretEnvNames()...)
		for _, t := range sv.e.Triggers {
			if t.Hook != nil {
				names = append(names, t.Hook.SecretEnv)
			}
		}
		for _, a := range sv.e.Agents {
			if n := ask.SpecOf(a).Notify; n != nil {
				names = append(names, n.SecretEnv, n.SlackEnv)
			}
		}
	}
	slices.Sort(names)
	return slices.DeleteFunc(slices.Compact(names), func(n string) bool { return n == "" })
}

// hideSecrets keeps the server's secrets from its runs: their variables
// out of the environment of scripts and MCP servers (environ), their
// values (and token's) redacted from what the server answers and from
// what each run makes (sessionOptions): a reply streamed a delta at a
// time never lets one through split across two deltas.
func (rs *Runs) hideSecrets(token string) {
	rs.hidden = secretNames(rs.list)
	values := []string{token}
	for _, n := range rs.hidden {
		if v, ok := rs.o.LookupEnv(n); ok {
			values = append(values, v)
		}
	}
	rs.secretValues = values
	rs.serverSecrets = secrets.New(values...)
}

// environ is the environment of the runs' scripts and MCP servers: the
// server's (Options.Environ), less every variable that holds a secret.
func (rs *Runs) environ() []string {
	base := os.Environ()
	if rs.o.Environ != nil {
		base = rs.o.Environ()
	}
	out := make([]string, 0, len(base))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, hidden := slices.BinarySearch(rs.hidden, k); !hidden {
			out = append(out, kv)
		}
	}
	return out
}
