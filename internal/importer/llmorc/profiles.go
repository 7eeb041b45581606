package llmorc

import (
	"fmt"
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
	if l, ok := p.lines["provider"]; ok {
		at.Line = l
	}
	prov, _ := p.m["provider"].(string)
	if prov != "" && !knownProvider(prov) && !oauthProvider(prov) {
		if d := im.defaultProfile(p.name); d != nil {
			// llm-orc cannot load the provider and runs the project's
			// default model instead
			im.problem(p.file, at, "profile %q: provider %q: unknown; llm-orc falls back to default_models' %q, and so does the converted profile", p.name, prov, d.name)
			p.converted = true
			if out := im.profileOf(d); out != nil {
				cp := *out
				p.out = &cp
			}
			return p.out
		}
		d := im.defaultModel()
		im.problem(p.file, at, "profile %q: provider %q: unknown; llm-orc falls back to default_models' fallback model %q (%s), and so does the converted profile",
			p.name, prov, d["model"], d["provider"])
		p.converted = true
		p.out = im.convertProfile(p.file, at, d, fmt.Sprintf("profile %q", p.name))
		return p.out
	}
	out := im.convertProfile(p.file, at, p.m, fmt.Sprintf("profile %q", p.name))
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
func (im *importer) convertProfile(file string, at *yaml.Node, m map[string]any, who string) *outProfile {
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
	case "":
		im.problem(file, at, "%s: model %q without a provider: not converted", who, out.Model)
		return nil
	default:
		if oauthProvider(prov) {
			im.problem(file, at, "%s: provider %q: an OAuth login, not converted (give the agents a profile with an API key)", who, prov)
		} else {
			im.problem(file, at, "%s: provider %q: not converted (ensemble has openai, anthropic and ollama)", who, prov)
		}
		return nil
	}
	if out.Model == "" {
		im.problem(file, at, "%s: no model: not converted", who)
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

func knownProvider(p string) bool {
	switch p {
	case "ollama", "anthropic-api", "anthropic", "openai", "openai-compatible", "openai-compat", "google-gemini", "google":
		return true
	}
	return false
}

// oauthProvider: llm-orc's providers that log in with OAuth, which have no
// equivalent.
func oauthProvider(p string) bool {
	switch p {
	case "anthropic-claude-pro-max", "claude-cli":
		return true
	}
	return false
}

// defaultProfile is the profile of the project's default_models (of
// config.yaml, at the top or under project:) that llm-orc falls back to
// when a profile's provider cannot be loaded: its "test" entry, which
// llm-orc takes only when its provider is ollama; nil when there is none,
// or it is the profile itself (then defaultModel applies).
func (im *importer) defaultProfile(self string) *profile {
	name := im.defaults["test"]
	p := im.profiles[name]
	if p == nil || name == self {
		return nil
	}
	if prov, _ := p.m["provider"].(string); prov != "ollama" {
		return nil
	}
	return p
}

// defaultModel is llm-orc's last resort when a profile's provider cannot
// be loaded and default_models has no ollama "test" profile: the model of
// default_models' "fallback" (llama3 when unset) on its
// "fallback_provider" (ollama when unset).
func (im *importer) defaultModel() map[string]any {
	model, prov := im.defaults["fallback"], im.defaults["fallback_provider"]
	if model == "" {
		model = "llama3"
	}
	if prov == "" {
		prov = "ollama"
	}
	return map[string]any{"provider": prov, "model": model}
}
