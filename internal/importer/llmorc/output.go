package llmorc

// outAgent is an agent of an ensemble file, its fields in the format's order.
type outAgent struct {
	Name           string         `yaml:"name"`
	Script         string         `yaml:"script,omitempty"`
	Protocol       string         `yaml:"protocol,omitempty"`
	ModelProfile   string         `yaml:"model_profile,omitempty"`
	Ensemble       string         `yaml:"ensemble,omitempty"`
	Dispatch       *outDispatch   `yaml:"dispatch,omitempty"`
	Prompt         string         `yaml:"prompt,omitempty"`
	OutputFormat   string         `yaml:"output_format,omitempty"`
	OutputSchema   any            `yaml:"output_schema,omitempty"`
	Input          string         `yaml:"input,omitempty"`
	Parameters     map[string]any `yaml:"parameters,omitempty"`
	Dependencies   []any          `yaml:"dependencies,omitempty"`
	When           string         `yaml:"when,omitempty"`
	FanOut         *outFanOut     `yaml:"fan_out,omitempty"`
	Output         string         `yaml:"output,omitempty"`
	Loop           *outLoop       `yaml:"loop,omitempty"`
	TimeoutSeconds any            `yaml:"timeout_seconds,omitempty"`
}

type outDep struct {
	AgentName string `yaml:"agent_name"`
	Condition string `yaml:"condition,omitempty"`
	Select    string `yaml:"select,omitempty"`
}

type outFanOut struct {
	Over string `yaml:"over"`
}

type outDispatch struct {
	On    string            `yaml:"on"`
	Cases map[string]string `yaml:"cases"`
}

type outLoop struct {
	Until         string `yaml:"until"`
	MaxIterations any    `yaml:"max_iterations"`
	Carry         string `yaml:"carry,omitempty"`
	OnExhausted   string `yaml:"on_exhausted"`
}

type outProfile struct {
	Provider       string         `yaml:"provider"`
	Model          string         `yaml:"model"`
	BaseURL        string         `yaml:"base_url,omitempty"`
	APIKeyEnv      string         `yaml:"api_key_env,omitempty"`
	Temperature    any            `yaml:"temperature,omitempty"`
	MaxTokens      any            `yaml:"max_tokens,omitempty"`
	SystemPrompt   string         `yaml:"system_prompt,omitempty"`
	TimeoutSeconds any            `yaml:"timeout_seconds,omitempty"`
	Pricing        map[string]any `yaml:"pricing,omitempty"`
	Fallback       []string       `yaml:"fallback,omitempty"`
	Options        map[string]any `yaml:"options,omitempty"`
}

type outEnsemble struct {
	Version     int                    `yaml:"version"`
	Name        string                 `yaml:"name"`
	Description string                 `yaml:"description,omitempty"`
	Input       string                 `yaml:"input,omitempty"`
	Output      string                 `yaml:"output,omitempty"`
	Models      map[string]*outProfile `yaml:"models,omitempty"`
	Agents      []*outAgent            `yaml:"agents"`
	Limits      *outLimits             `yaml:"conversation_limits,omitempty"`
}

type outLimits struct {
	ParallelAgentLimit any `yaml:"parallel_agent_limit,omitempty"`
}
