package llmorc

import (
	"regexp"
	"strconv"
	"strings"
)

var badName = regexp.MustCompile(`[^a-z0-9_-]+`)

// sanitize is an llm-orc name as an ensemble name: lower case, any other
// character a '-'.
func sanitize(name string) string {
	return strings.Trim(badName.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// member is base.name, or base["name"] when name is no identifier.
func member(base, name string, optional bool) string {
	if ident.MatchString(name) {
		if optional {
			return base + "?." + name
		}
		return base + "." + name
	}
	if optional {
		return base + "?.[" + strconv.Quote(name) + "]"
	}
	return base + "[" + strconv.Quote(name) + "]"
}

// path is base followed by the dotted fields of p, each read optionally.
func fieldPath(base, p string) string {
	for _, f := range strings.Split(p, ".") {
		base = member(base, f, true)
	}
	return base
}

// literal is an llm-orc predicate literal as an expression.
func literal(tok string) string {
	switch {
	case tok == "true" || tok == "false":
		return tok
	case len(tok) >= 2 && tok[0] == tok[len(tok)-1] && (tok[0] == '"' || tok[0] == '\''):
		return strconv.Quote(tok[1 : len(tok)-1])
	}
	if _, err := strconv.ParseFloat(tok, 64); err == nil {
		return tok
	}
	return strconv.Quote(tok)
}

// truthy is e's Python truthiness, as llm-orc tests a lone ${ref}: false
// for null, false, 0, "", [] and {}, true for anything else.
func truthy(e string) string {
	return e + ` not in [nil, false, 0, "", [], {}]`
}

// predicate converts llm-orc's `${ref}`, `${ref} == literal` or
// `${ref} != literal` with ref
// turning a ${...} token into an expression; ok is false when the
// predicate has another form.
func predicate(p string, ref func(tok string) (string, bool)) (string, bool) {
	p = strings.TrimSpace(p)
	op := "=="
	left, right, eq := strings.Cut(p, "==")
	if !eq {
		op = "!="
		left, right, eq = strings.Cut(p, "!=")
	}
	e, ok := ref(strings.TrimSpace(left))
	if !ok {
		return "", false
	}
	if !eq {
		return truthy(e), true
	}
	return e + " " + op + " " + literal(strings.TrimSpace(right)), true
}

var (
	refDepField = regexp.MustCompile(`^\$\{([^.}]+)\.([^}]+)\}$`)
	refField    = regexp.MustCompile(`^\$\{([^}]+)\}$`)
)
