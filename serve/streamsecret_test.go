package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/serve"
)

// A secret of the server (its token here) that a model streams split
// across two deltas is held back and redacted by the run itself, as the
// file's own keys are: redacting each chunk as it leaves let both halves
// through, one chunk each, from a file without keys of its own (whose run
// held nothing back).
func TestServerSecretSplitAcrossDeltasIsRedacted(t *testing.T) {
	t.Parallel()
	half := len(testToken) / 2
	model := fakemodel.New(t, func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Chunks: []string{"the token is " + testToken[:half], testToken[half:] + ", said the model"}}
	})
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "chatty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chatty", "ensemble.yaml"), []byte(`name: chatty
models: {m: {provider: ollama, model: x, base_url: "`+model.URL()+`"}}
output: talk
agents:
  - {name: talk, model_profile: m}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil)

	body, _ := json.Marshal(map[string]any{"model": "chatty", "stream": true, "messages": []any{map[string]string{"role": "user", "content": "hi"}}})
	req, err := http.NewRequest("POST", s.url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if json.Unmarshal([]byte(data), &chunk) == nil && len(chunk.Choices) > 0 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	if resp.StatusCode != 200 || !strings.Contains(text.String(), "the token is") || !strings.Contains(text.String(), "said the model") {
		t.Fatalf("%d: %q", resp.StatusCode, text.String())
	}
	if strings.Contains(text.String(), testToken) || strings.Contains(text.String(), "\n\n") {
		t.Errorf("the streamed reply shows the token, or was sent again whole: %q", text.String())
	}
	// The run's events, where the deltas are kept, hold no half either.
	id := resp.Header.Get(serve.RunIDHeader)
	_, events, _ := s.sse(t, id)
	var deltas strings.Builder
	for _, e := range events {
		var ev struct{ Type, Message string }
		if json.Unmarshal([]byte(e), &ev) == nil && ev.Type == "text_delta" {
			deltas.WriteString(ev.Message)
		}
	}
	if deltas.Len() == 0 || strings.Contains(deltas.String(), testToken) {
		t.Errorf("the run's text deltas: %q", deltas.String())
	}
}
