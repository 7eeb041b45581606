package llmorc

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
)

// narrowCases takes out of every dispatch the cases whose written file
// does not validate (a case that does not load makes its dispatcher fail
// to load), lists them, and rewrites the dispatchers so narrowed.
func (im *importer) narrowCases(names []string, convs map[string]*conv) error {
	valid := map[string]error{}
	check := func(name string) error {
		if err, ok := valid[name]; ok {
			return err
		}
		opts := kinds.Builtin().Load(ensemble.LoadOptions{})
		_, err := ensemble.Load(filepath.Join(im.out, name+".yaml"), opts)
		valid[name] = err
		return err
	}
	for _, n := range names {
		c := convs[n]
		changed := false
		for _, da := range c.dispatchers {
			var dropped []string
			cases := make([]string, 0, len(da.d.Cases))
			for cn := range da.d.Cases {
				cases = append(cases, cn)
			}
			sort.Strings(cases)
			for _, cn := range cases {
				if check(cn) != nil {
					delete(da.d.Cases, cn)
					dropped = append(dropped, cn)
				}
			}
			if len(dropped) > 0 {
				changed = true
				c.problem(da.node, "agent %q: dispatch: ensembles whose converted file does not validate are no cases (validate names why): %s", da.agent, strings.Join(dropped, ", "))
			}
		}
		if !changed {
			continue
		}
		b, err := c.encode()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(im.out, n+".yaml"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
