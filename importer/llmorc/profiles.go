package llmorc

import (
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// profileKeys are the llm-orc profile keys that are converted.
var profileKeys = map[string]bool{"provider": true, "model": true, "system_prompt": true, "timeout_seconds": true,
	"temperature": true, "max_tokens": true, "cost_per_token": true, "fallback_model_profile": true, "base_url": true, "options": true}

// profileOf is p converted (once: its problems are listed once); nil when
// its provider cannot be.
func (im *importer) profileOf(p *profile) *outProfile {
	if p == nil {
		return nil
	}
	if p.converted {
		return p.out
	}
	at := &yaml.Node{Line: p.line}
	out := im.convertProfile(p.file, at, p.m, p.name)
	for k := range p.m {
		if !profileKeys[k] {
			im.problem(p.file, &yaml.Node{Line: p.lines[k]}, "profile %q: %s: not converted", p.name, k)
		}
	}
	if out != nil {
		if o, ok := p.m["options"].(map[string]any); ok {
			im.applyOptions(p.file, &yaml.Node{Line: p.lines["options"]}, "profile \""+p.name+"\"", o, out)
		}
		if fb, ok := p.m["fallback_model_profile"].(string); ok && fb != "" {
			out.Fallback = []string{sanitize(fb)}
		}
	}
	p.converted, p.out = true, out
	return out
}

// convertProfile converts a profile's provider and model settings; nil
// when the provider has no equivalent.
func (im *importer) convertProfile(file string, at *yaml.Node, m map[string]any, name string) *outProfile {
	s := func(k string) string { v, _ := m[k].(string); return v }
	out := &outProfile{Model: s("model"), SystemPrompt: s("system_prompt"), BaseURL: s("base_url"),
		TimeoutSeconds: m["timeout_seconds"], Temperature: m["temperature"], MaxTokens: m["max_tokens"]}
	switch prov := s("provider"); prov {
	case "ollama":
		out.Provider = "ollama"
	case "anthropic-api", "anthropic":
		out.Provider, out.APIKeyEnv = "anthropic", "ANTHROPIC_API_KEY"
	case "openai", "openai-compatible", "openai-compat":
		out.Provider = "openai"
		if out.BaseURL == "" {
			out.APIKeyEnv = "OPENAI_API_KEY"
		}
	case "google-gemini", "google":
		out.Provider, out.APIKeyEnv = "openai", "GEMINI_API_KEY"
		out.BaseURL = "https://generativelanguage.googleapis.com/v1beta/openai/"
	default:
		im.problem(file, at, "profile %q: provider %q: not converted (ensemble has openai, anthropic and ollama; an OAuth login such as anthropic-claude-pro-max is not supported)", name, prov)
		return nil
	}
	if out.Model == "" {
		im.problem(file, at, "profile %q: no model: not converted", name)
		return nil
	}
	switch c := m["cost_per_token"].(type) {
	case int:
		if c > 0 {
			out.Pricing = map[string]any{"input_per_million": c * 1_000_000, "output_per_million": c * 1_000_000}
		}
	case float64:
		if c > 0 {
			out.Pricing = map[string]any{"input_per_million": c * 1e6, "output_per_million": c * 1e6}
		}
	}
	return out
}

// readcapStat is the regular file rel under root.
func readcapStat(root, rel string) (os.FileInfo, error) {
	st, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	if err == nil && !st.Mode().IsRegular() {
		return nil, os.ErrNotExist
	}
	return st, err
}
