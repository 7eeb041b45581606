package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// parseJSONReply reads a reply under output_format: json (SPEC §4.2): the
// whole reply as JSON, or else the first fenced block (```json or ```) in
// it. Anything else is an error.
func parseJSONReply(text string) (any, error) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return nil, errors.New("output_format json: the reply is empty")
	}
	v, firstErr := decodeOne(trimmed)
	if firstErr == nil {
		return v, nil
	}
	if block, ok := fencedBlock(trimmed); ok {
		v, err := decodeOne(block)
		if err != nil {
			return nil, fmt.Errorf("output_format json: the fenced block in the reply is not valid JSON: %v", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("output_format json: the reply is not valid JSON: %v", firstErr)
}

// decodeOne decodes exactly one JSON value.
func decodeOne(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if strings.TrimSpace(s[dec.InputOffset():]) != "" {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

// fencedBlock finds the first ``` fenced block, preferring one labelled json.
func fencedBlock(s string) (string, bool) {
	var first string
	found := false
	rest := s
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		after := rest[i+3:]
		nl := strings.IndexByte(after, '\n')
		if nl < 0 {
			break
		}
		lang := strings.ToLower(strings.TrimSpace(after[:nl]))
		body := after[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			break
		}
		content := strings.TrimSpace(body[:end])
		if lang == "json" {
			return content, true
		}
		if !found && lang == "" {
			first, found = content, true
		}
		rest = body[end+3:]
	}
	return first, found
}
