package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseJSONReply parses a reply that must be JSON (output_format: json,
// docs/llm.md#messages-and-memory): the whole reply, trimmed, or else the first fenced code block in it
// — ```json preferred, then any ``` block — so "Here it is:\n```json\n{...}\n```"
// is accepted.
func ParseJSONReply(text string) (any, error) {
	trimmed := strings.TrimSpace(text)
	var v any
	err := json.Unmarshal([]byte(trimmed), &v)
	if err == nil {
		return v, nil
	}
	for _, body := range fencedBlocks(trimmed) {
		var fv any
		if ferr := json.Unmarshal([]byte(body), &fv); ferr == nil {
			return fv, nil
		} else {
			err = ferr
		}
	}
	if trimmed == "" {
		return nil, errors.New("the reply is empty, not JSON")
	}
	return nil, fmt.Errorf("the reply is not valid JSON: %v", err)
}

// fencedBlocks returns the bodies of the ``` blocks in text, the ones tagged
// json first. A block may be on one line ("```json {...}```"), and the last
// may be unterminated (a truncated reply).
func fencedBlocks(text string) []string {
	var tagged, other []string
	rest := text
	for {
		start := strings.Index(rest, "```")
		if start < 0 {
			break
		}
		rest = rest[start+3:]
		var inner string
		if end := strings.Index(rest, "```"); end >= 0 {
			inner, rest = rest[:end], rest[end+3:]
		} else {
			inner, rest = rest, ""
		}
		info := ""
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
			info, inner = strings.TrimSpace(inner[:nl]), inner[nl+1:]
		} else if len(inner) >= 4 && strings.EqualFold(inner[:4], "json") &&
			(len(inner) == 4 || strings.ContainsRune(" \t{[", rune(inner[4]))) {
			info, inner = "json", inner[4:]
		}
		b := strings.TrimSpace(inner)
		if strings.EqualFold(info, "json") {
			tagged = append(tagged, b)
		} else {
			other = append(other, b)
		}
		if rest == "" {
			break
		}
	}
	return append(tagged, other...)
}
