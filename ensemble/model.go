package ensemble

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

var profileKeys = []string{"provider", "model", "base_url", "api_key_env", "temperature", "max_tokens", "system_prompt", "timeout_seconds", "context_window", "pricing", "fallback", "options"}

var providers = []string{"openai", "anthropic", "ollama"}

// LoadProfiles reads a profiles file (docs/format.md#model-profiles): a YAML file whose only
// top-level key is models:, a mapping of profile names to profiles shaped as
// in an ensemble file. lookup expands ${VAR} (nil means os.LookupEnv). The
// error is a *ErrorList.
func LoadProfiles(path string, lookup func(string) (string, bool)) (map[string]*ModelProfile, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var errs errorSink
	models := loadProfiles(path, lookup, &errs)
	if err := errs.result(); err != nil {
		return nil, err
	}
	return models, nil
}

func loadProfiles(path string, lookup func(string) (string, bool), errs *errorSink) map[string]*ModelProfile {
	d, root := readProfiles(path, "", lookup, errs)
	if root == nil {
		return nil
	}
	d.keyVars = d.keyVarsOf(root, nil)
	models := d.profilesFile(root)
	checkFallbacks(models)
	return models
}

// readProfiles reads and parses a profiles file, which what (--profiles,
// $ENSEMBLE_PROFILES, or "") names; root is nil after an error.
func readProfiles(path, what string, lookup func(string) (string, bool), errs *errorSink) (d *decoder, root *yaml.Node) {
	data, err := ReadFile(path)
	if err != nil {
		for _, e := range *err.(*ErrorList) {
			if what != "" { // where the path came from: it may be set far away
				e.Message = strings.Replace(e.Message, "cannot read", "cannot read this "+what+" file", 1)
			}
			errs.add(e)
		}
		return nil, nil
	}
	d = newDecoder(path, data, lookup, errs)
	return d, d.document(data)
}

// keyVarsOf adds to keys (made when nil) the api_key_env variables of the
// profiles under root's models: key (an ensemble file and a profiles file
// have the same shape there), each with its profile's name. It reports
// nothing: decoding the profiles does.
func (d *decoder) keyVarsOf(root *yaml.Node, keys map[string]string) map[string]string {
	if keys == nil {
		keys = map[string]string{}
	}
	quiet := *d
	quiet.errs = new(errorSink)
	if resolve(root).Kind != yaml.MappingNode {
		return keys
	}
	models := quiet.mapping(root, "", "models").get("models")
	if !models.ok() || resolve(models.val).Kind != yaml.MappingNode {
		return keys
	}
	for name, pf := range quiet.mapping(models.val, "models").all() {
		if resolve(pf.val).Kind != yaml.MappingNode {
			continue
		}
		if v := quiet.str(quiet.mapping(pf.val, "", "api_key_env").get("api_key_env")); envNamePattern.MatchString(v) {
			if _, seen := keys[v]; !seen {
				keys[v] = name
			}
		}
	}
	return keys
}

// profilesFile decodes the root of a profiles file.
func (d *decoder) profilesFile(root *yaml.Node) map[string]*ModelProfile {
	m := d.mapping(root, "", "models")
	if m == nil {
		return nil
	}
	models := d.profiles(m.get("models"))
	d.need(m.get("models"), len(models) == 0)
	return models
}

// profiles decodes a models: mapping.
func (d *decoder) profiles(f field) map[string]*ModelProfile {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, "models")
	if m == nil {
		return nil
	}
	out := make(map[string]*ModelProfile, len(m.all()))
	for name, pf := range m.all() {
		if !namePattern.MatchString(name) {
			d.errorf(pf.key, "model profile name %q is invalid: use only a-z, 0-9, _ and -", name)
		}
		out[name] = d.profile(pf)
	}
	return out
}

// profile decodes one model profile. ${VAR} in provider, model, base_url and
// system_prompt expands from the environment (see expand). api_key_env is not
// expanded: it is a variable's name.
func (d *decoder) profile(pf field) *ModelProfile {
	where := fmt.Sprintf("model profile %q", pf.name)
	p := &ModelProfile{Pos: pos(pf.key), File: d.file, Name: pf.name}
	m := d.mapping(pf.val, where, profileKeys...)
	if m == nil {
		return p
	}
	var ok bool
	p.Provider, ok = d.expand(m.get("provider"))
	switch f := m.get("provider"); {
	case !ok:
	case !f.ok() || p.Provider == "":
		d.need(f, true)
	case !slices.Contains(providers, p.Provider):
		d.bad(f, "must be one of %s, got %q", strings.Join(providers, ", "), p.Provider)
	}
	if p.Model, ok = d.expand(m.get("model")); ok {
		d.need(m.get("model"), p.Model == "")
	}
	p.BaseURL, ok = d.expand(m.get("base_url"))
	if u, err := url.Parse(p.BaseURL); ok && p.BaseURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		d.bad(m.get("base_url"), "must be an http or https URL, got %q", p.BaseURL)
	}
	if f := m.get("api_key_env"); f.ok() {
		p.APIKeyEnv = d.str(f)
		switch {
		case looksLikeKey(p.APIKeyEnv):
			d.bad(f, "names the variable holding the key, not the key").Source = "" // never echo a secret
		case envNamePattern.MatchString(p.APIKeyEnv):
		default:
			d.bad(f, "must be the name of an environment variable such as OPENAI_API_KEY, got %q", p.APIKeyEnv)
		}
	} else if p.Provider == "anthropic" || (p.Provider == "openai" && p.BaseURL == "") {
		d.errorf(pf.val, "%s: api_key_env is required for provider %s (name the variable holding the key)", where, p.Provider)
	}
	if t, ok := d.number(m.get("temperature")); ok {
		if t < 0 || t > 2 {
			d.bad(m.get("temperature"), "must be between 0 and 2, got %s", m.get("temperature").val.Value)
		}
		p.Temperature = &t
	}
	p.MaxTokens = d.positive(m.get("max_tokens"))
	p.SystemPrompt, _ = d.expand(m.get("system_prompt"))
	p.Timeout = d.seconds(m.get("timeout_seconds"))
	p.ContextWindow = d.contextWindow(m.get("context_window"))
	p.Pricing = d.pricing(m.get("pricing"))
	d.fallbacks(p, m.get("fallback"))
	p.Options = d.options(m.get("options"), where)
	return p
}

// reservedOptions are the request fields the run sets itself, for one
// provider or another, each with what sets it: options never override them.
var reservedOptions = map[string]string{
	"model":                 "use the profile's model",
	"messages":              "the run sends the conversation",
	"system":                "use the profile's system_prompt (the agent's prompt follows it)",
	"max_tokens":            "use the profile's max_tokens",
	"max_completion_tokens": "use the profile's max_tokens",
	"temperature":           "use the profile's temperature",
	"tools":                 "use the agent's tools",
	"tool_choice":           "the run sets it (see docs/llm.md#output-schemas)",
	"response_format":       "use the agent's output_schema",
	"stream":                "use run --stream",
	"stream_options":        "use run --stream",
}

// ReservedOption reports whether key is a request field the run sets
// itself, which a profile's options may not set, and what to use instead.
func ReservedOption(key string) (instead string, reserved bool) {
	instead, reserved = reservedOptions[key]
	return instead, reserved
}

// ReservedOptions lists, sorted, the request fields options may not set.
func ReservedOptions() []string { return slices.Sorted(maps.Keys(reservedOptions)) }

// options decodes a profile's options: a mapping of any keys but the
// reserved ones to JSON values, whose strings expand ${VAR} as the
// profile's other fields do (never an api_key_env variable).
func (d *decoder) options(f field, where string) map[string]any {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, f.nested())
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m.all()))
	for _, k := range slices.Sorted(maps.Keys(m.all())) {
		of := m.get(k)
		if instead, reserved := ReservedOption(k); reserved {
			d.errorf(of.key, "%s: options.%s is set by the run: %s", where, k, instead)
			continue
		}
		of.where, of.name = where, "options."+k // model profile "x": options.k …
		out[k] = d.expandValue(of, d.value(of))
	}
	return out
}

// expandValue expands ${VAR} in every string of the JSON value v, which
// the field f holds; keys stay as written.
func (d *decoder) expandValue(f field, v any) any {
	switch v := v.(type) {
	case string:
		s, _ := d.expandString(f, v)
		return s
	case []any:
		for i, e := range v {
			v[i] = d.expandValue(f, e)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = d.expandValue(f, e)
		}
	}
	return v
}

var envRef = regexp.MustCompile(`\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// expand decodes a string field and expands it: ${VAR} is the variable's
// value, ${VAR:-default} falls back to default when VAR is unset or empty,
// and $${...} stands for a literal ${...}. An unset variable without a
// fallback is an error: expanding it to "" would silently change the meaning
// of the field (an empty base_url sends the request to the public endpoint).
// ok is false when such an error was reported.
func (d *decoder) expand(f field) (s string, ok bool) {
	return d.expandString(f, d.str(f))
}

// expandString expands s, the value (or a string inside the value) of f.
func (d *decoder) expandString(f field, s string) (string, bool) {
	ok := true
	s = envRef.ReplaceAllStringFunc(s, func(ref string) string {
		if strings.HasPrefix(ref, "$$") {
			return ref[1:]
		}
		sub := envRef.FindStringSubmatch(ref)
		name, fallback := sub[1], sub[2]
		if profile, isKey := d.keyVars[name]; isKey {
			d.bad(f, "uses ${%s}, the API key variable of profile %q; keys are never expanded into the file", name, profile)
			ok = false
			return ""
		}
		if d.expanded != nil {
			*d.expanded = append(*d.expanded, expansion{d: d, f: f, name: name})
		}
		v, set := d.lookup(name)
		switch {
		case fallback != "" && v == "":
			return fallback[2:]
		case !set:
			d.bad(f, "uses ${%s}, which is not set; set it, or give a fallback with ${%s:-default}", name, name)
			ok = false
		}
		return v
	})
	return s, ok
}

var (
	windowKeys = []string{"max_tokens", "max_messages", "strategy", "recent_turns"}
	strategies = []string{"oldest_first", "middle_out", "recent_turns"}
)

// contextWindow decodes a context_window block (docs/llm.md#messages-and-memory) of a profile or an
// agent. strategy defaults to oldest_first; recent_turns goes with strategy
// recent_turns and only with it; other strategies need max_tokens or
// max_messages.
func (d *decoder) contextWindow(f field) *ContextWindow {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, f.nested(), windowKeys...)
	if m == nil {
		return nil
	}
	w := &ContextWindow{
		MaxTokens:   d.positive(m.get("max_tokens")),
		MaxMessages: d.positive(m.get("max_messages")),
		Strategy:    d.str(m.get("strategy")),
		RecentTurns: d.positive(m.get("recent_turns")),
	}
	switch {
	case !m.get("strategy").ok():
		w.Strategy = "oldest_first"
	case !slices.Contains(strategies, w.Strategy):
		d.bad(m.get("strategy"), "must be one of %s, got %q%s", strings.Join(strategies, ", "), w.Strategy, suggest(w.Strategy, strategies))
	}
	switch {
	case w.Strategy == "recent_turns":
		d.need(m.get("recent_turns"), false)
	case m.get("recent_turns").ok():
		d.errorf(m.get("recent_turns").key, "%s: recent_turns only applies to strategy recent_turns", f.nested())
	case !m.get("max_tokens").ok() && !m.get("max_messages").ok():
		d.errorf(resolve(f.val), "%s sets no limit: give max_tokens or max_messages", f.nested())
	}
	return w
}
