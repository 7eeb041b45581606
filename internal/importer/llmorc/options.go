package llmorc

import (
	"sort"

	"go.yaml.in/yaml/v3"
)

// passOptions are llm-orc options with the same meaning in the request
// body ensemble sends (options of a profile, docs/llm.md#provider-options).
var passOptions = map[string]bool{"top_p": true, "seed": true, "stop": true,
	"frequency_penalty": true, "presence_penalty": true}

// applyOptions converts llm-orc's options (of a profile or an agent) into
// p: temperature, num_predict (or max_tokens) to p's fields, the request
// fields of passOptions to p.Options; each other key is listed at at, as
// the Ollama native API's (num_ctx, top_k, ...) have no equivalent on the
// endpoint ensemble speaks.
func (im *importer) applyOptions(file string, at *yaml.Node, who string, opts map[string]any, p *outProfile) {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		switch {
		case k == "temperature":
			p.Temperature = v
		case k == "num_predict" || k == "max_tokens":
			p.MaxTokens = v
		case passOptions[k] || (k == "top_k" && p.Provider == "anthropic"):
			if p.Options == nil {
				p.Options = map[string]any{}
			} else {
				p.Options = copyMap(p.Options)
			}
			p.Options[k] = v
		default:
			im.problem(file, at, "%s: options.%s: not converted (no equivalent on the endpoint ensemble speaks)", who, k)
		}
	}
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
