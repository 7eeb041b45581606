package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseJSONReply parses a reply that must be JSON (output_format: json, SPEC
// §4.2): the whole reply, trimmed, or else the first fenced code block in it
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
// json first.
func fencedBlocks(text string) []string {
	var tagged, other []string
	rest := text
	for {
		start := strings.Index(rest, "```")
		if start < 0 {
			break
		}
		rest = rest[start+3:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		info := strings.TrimSpace(rest[:nl])
		body := rest[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			// An unterminated block (a truncated reply): take the rest.
			end = len(body)
		}
		b := strings.TrimSpace(body[:end])
		if strings.EqualFold(info, "json") {
			tagged = append(tagged, b)
		} else {
			other = append(other, b)
		}
		if end+3 > len(body) {
			break
		}
		rest = body[end+3:]
	}
	return append(tagged, other...)
}
