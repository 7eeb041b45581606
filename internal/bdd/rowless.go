package bdd

import (
	"fmt"
	"strconv"

	messages "github.com/cucumber/messages/go/v21"
)

// rowlessOutlines are the scenario outlines of the features, among those
// the files' :LINE and the tag expression select, whose Examples have no
// rows: Gherkin makes no scenario of them, so they run nothing, silently.
// Each is said as FILE:LINE: ... .
func rowlessOutlines(features []*feature, tagExpr string) []string {
	var out []string
	for _, f := range features {
		ft := f.doc.Feature
		if ft == nil || f.x != nil { // rows from a file: examplesfile.go checks them
			continue
		}
		only := int64(-1)
		if f.arg != f.name {
			_, suffix := splitLine(f.arg)
			only, _ = strconv.ParseInt(suffix[1:], 10, 64)
		}
		check := func(sc *messages.Scenario, inherited []*messages.Tag) {
			if len(sc.Examples) == 0 || only >= 0 && sc.Location.Line != only {
				return
			}
			tags := append(append([]*messages.Tag(nil), inherited...), sc.Tags...)
			rows := 0
			for _, ex := range sc.Examples {
				rows += len(ex.TableBody)
				tags = append(tags, ex.Tags...)
			}
			if rows > 0 || !matchTags(tagExpr, pickleTags(tags)) {
				return
			}
			out = append(out, fmt.Sprintf("%s:%d: %s %q has no Examples rows: it runs nothing (give its Examples table a row under the header)", f.name, sc.Location.Line, sc.Keyword, sc.Name))
		}
		for _, c := range ft.Children {
			if c.Scenario != nil {
				check(c.Scenario, ft.Tags)
			}
			if c.Rule != nil {
				for _, rc := range c.Rule.Children {
					if rc.Scenario != nil {
						check(rc.Scenario, append(append([]*messages.Tag(nil), ft.Tags...), c.Rule.Tags...))
					}
				}
			}
		}
	}
	return out
}

func pickleTags(tags []*messages.Tag) []*messages.PickleTag {
	out := make([]*messages.PickleTag, len(tags))
	for i, t := range tags {
		out[i] = &messages.PickleTag{Name: t.Name, AstNodeId: t.Id}
	}
	return out
}
