package llmorc

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// llm-orc finds a script by its path under .llm-orc, then by its bare name
// under .llm-orc/scripts, and its built-in primitives (primitives/...) in
// its own Python package. The import does the same: a primitive is copied
// from the installed package (Options.Package, or the one python3 imports)
// under its own path, and its origin listed.

// findScript is where llm-orc finds the script ref (a clean relative
// path): the path under .llm-orc to copy, or for a primitive the file of
// the llm-orc package (abs); "" for both when it is nowhere.
func (im *importer) findScript(ref string) (rel, abs string) {
	for _, cand := range []string{ref, path.Join("scripts", ref)} {
		if im.leaves(cand) {
			return "", ""
		}
		if _, err := readcapStat(im.root, cand); err == nil {
			return cand, ""
		}
	}
	if strings.HasPrefix(ref, "primitives/") {
		if pkg := im.llmOrcPackage(); pkg != "" {
			for _, cand := range []string{ref, path.Join("scripts", ref)} {
				p := filepath.Join(pkg, filepath.FromSlash(cand))
				if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
					return "", p
				}
			}
		}
	}
	return "", ""
}

// pythonTimeout bounds the python3 that names llm-orc's package.
const pythonTimeout = 20 * time.Second

// llmOrcPackage is the folder of the installed llm-orc package (llm_orc):
// Options.Package, or the one python3 imports; "" when there is none.
func (im *importer) llmOrcPackage() string {
	if im.pkgAsked {
		return im.pkg
	}
	im.pkgAsked = true
	if im.opts.Package != "" {
		im.pkg = im.opts.Package
		return im.pkg
	}
	py := im.opts.Python
	if py == "" {
		py = "python3"
	}
	ctx, cancel := context.WithTimeout(context.Background(), pythonTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", "import os, llm_orc; print(os.path.dirname(llm_orc.__file__))").Output()
	if err != nil {
		return ""
	}
	if len(out) > 4096 {
		return ""
	}
	im.pkg = strings.TrimSpace(string(out))
	return im.pkg
}
