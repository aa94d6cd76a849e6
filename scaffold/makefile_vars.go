package scaffold

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// removedVar is a variable adopt removed from a Makefile because nothing
// used it once its recipes ran chartpilot.
type removedVar struct {
	Name string
	// Mentions are variables only the removed lines named, gone with them
	// (CATALOG_BASE_IMG, which set FROM_INDEX_OPT).
	Mentions []string
	// Why says what the variable did and what to do instead.
	Why string
}

func (r removedVar) String() string {
	s := r.Name
	if len(r.Mentions) > 0 {
		s += " (and " + strings.Join(r.Mentions, ", ") + " with it)"
	}
	return s + ": " + r.Why
}

// whyRemoved says, for the operator-sdk variables adopt removes, what
// they did and what chartpilot does instead.
var whyRemoved = map[string]string{
	"FROM_INDEX_OPT":   "it passed CATALOG_BASE_IMG to opm index add --from-index; catalog-build now builds the file-based catalog in catalog/ and adds no bundles to a base catalog image: to build on one, copy its catalog files into catalog/",
	"BUNDLE_GEN_FLAGS": "it held operator-sdk generate bundle's flags; the bundle target passes chartpilot bundle generate's (BUNDLE_METADATA_OPTS and USE_IMAGE_DIGESTS still apply)",
	"CONTAINER_TOOL":   "chartpilot builds and pushes the images without a container engine",
}

// toolVars name the binaries of the tool targets, which adopt leaves in
// place with their variables.
var toolVars = []string{"KUSTOMIZE", "HELM_OPERATOR", "OPERATOR_SDK", "OPM"}

// recipeVariables are the variables that the recipes of m's rules that
// ours replaces refer to, directly or through the definitions in m of
// other such variables.
func (m *makefile) recipeVariables(ours *makefile) []string {
	var out []string
	var add func(line string)
	add = func(line string) {
		for _, sm := range refRE.FindAllStringSubmatch(line, -1) {
			if slices.Contains(out, sm[1]) {
				continue
			}
			out = append(out, sm[1])
			for _, s := range m.definitionSites(sm[1]) {
				add(m.parts[s.part].lines[s.line])
			}
		}
	}
	for _, op := range ours.parts {
		if op.target == "" {
			continue
		}
		if up := m.rule(op.target); up != nil {
			for _, l := range up.lines[1:] {
				add(l)
			}
		}
	}
	return out
}

// removeDeadVariables removes the definitions of the candidates (variables
// the replaced recipes used) that nothing in m refers to any more, with
// their comments and the conditionals that only set them, until none is
// left; tool variables stay.
func (m *makefile) removeDeadVariables(candidates []string) []removedVar {
	var removed []removedVar
	for changed := true; changed; {
		changed = false
		for _, name := range candidates {
			if slices.Contains(toolVars, name) || len(m.definitionSites(name)) == 0 || m.referenced(name) {
				continue
			}
			why := whyRemoved[name]
			if why == "" {
				why = "only the operator-sdk recipes that now run chartpilot used it"
			}
			removed = append(removed, removedVar{Name: name, Mentions: m.removeDefinitions(name), Why: why})
			changed = true
		}
	}
	return removed
}

// site is a line of m: part and line index.
type site struct{ part, line int }

// definitionSites are the assignments of name outside recipes: in text
// parts, an indented assignment only inside a conditional.
func (m *makefile) definitionSites(name string) []site {
	var out []site
	for pi, p := range m.parts {
		if p.target != "" {
			continue
		}
		for li, l := range p.lines {
			sm := varRE.FindStringSubmatch(l)
			if sm == nil || sm[1] != name {
				continue
			}
			if strings.HasPrefix(l, "\t") {
				if _, _, ok := enclosingConditional(p.lines, li); !ok {
					continue
				}
			}
			out = append(out, site{pi, li})
		}
	}
	return out
}

// referenced tells whether a line of m other than a comment or a
// definition of name names it.
func (m *makefile) referenced(name string) bool {
	word := wordRE(name)
	defs := m.definitionSites(name)
	for pi, p := range m.parts {
		for li, l := range p.lines {
			if isComment(l) || slices.Contains(defs, site{pi, li}) {
				continue
			}
			if word.MatchString(l) {
				return true
			}
		}
	}
	return false
}

// removeDefinitions removes each definition of name: the line, or the
// whole conditional when it sets nothing else, with the comment lines
// right above. It returns the undefined variables the removed lines named
// that no line names any more.
func (m *makefile) removeDefinitions(name string) []string {
	var gone []string
	sites := m.definitionSites(name)
	slices.Reverse(sites)
	for _, s := range sites {
		p := &m.parts[s.part]
		start, end := s.line, s.line+1
		if cs, ce, ok := enclosingConditional(p.lines, s.line); ok && onlyDefines(p.lines[cs+1:ce], name) {
			start, end = cs, ce+1
		}
		for start > 0 && isComment(p.lines[start-1]) && !strings.HasPrefix(p.lines[start-1], "##@") {
			start--
		}
		for _, l := range p.lines[start:end] {
			gone = append(gone, mentioned(l)...)
		}
		p.lines = slices.Delete(p.lines, start, end)
		// No two blank lines where the block was.
		if start > 0 && start < len(p.lines) && p.lines[start-1] == "" && p.lines[start] == "" {
			p.lines = slices.Delete(p.lines, start, start+1)
		}
	}
	var out []string
	for _, v := range gone {
		if v != name && !slices.Contains(out, v) && len(m.definitionSites(v)) == 0 && !m.named(v) {
			out = append(out, v)
		}
	}
	return out
}

// named tells whether any non-comment line of m names v.
func (m *makefile) named(v string) bool {
	word := wordRE(v)
	for _, p := range m.parts {
		for _, l := range p.lines {
			if !isComment(l) && word.MatchString(l) {
				return true
			}
		}
	}
	return false
}

var (
	condStartRE = regexp.MustCompile(`^\s*(ifeq|ifneq|ifdef|ifndef)\b`)
	condEndRE   = regexp.MustCompile(`^\s*endif\b`)
	originRE    = regexp.MustCompile(`\$[({](?:origin|value|flavor)\s+([A-Za-z_][A-Za-z0-9_]*)[)}]`)
)

// enclosingConditional finds the innermost conditional around lines[i]:
// the indexes of its if* and endif lines.
func enclosingConditional(lines []string, i int) (start, end int, ok bool) {
	depth := 0
	start = -1
	for j := i - 1; j >= 0; j-- {
		switch {
		case condEndRE.MatchString(lines[j]):
			depth++
		case condStartRE.MatchString(lines[j]):
			if depth == 0 {
				start = j
			} else {
				depth--
			}
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return 0, 0, false
	}
	depth = 0
	for j := i + 1; j < len(lines); j++ {
		switch {
		case condStartRE.MatchString(lines[j]):
			depth++
		case condEndRE.MatchString(lines[j]):
			if depth == 0 {
				return start, j, true
			}
			depth--
		}
	}
	return 0, 0, false
}

// onlyDefines tells whether body holds nothing but assignments of name,
// blank lines and comments.
func onlyDefines(body []string, name string) bool {
	for _, l := range body {
		if strings.TrimSpace(l) == "" || isComment(l) {
			continue
		}
		if sm := varRE.FindStringSubmatch(l); sm == nil || sm[1] != name {
			return false
		}
	}
	return true
}

// mentioned are the variables a line refers to: $(X), ${X}, $(origin X).
func mentioned(l string) []string {
	var out []string
	for _, sm := range refRE.FindAllStringSubmatch(l, -1) {
		out = append(out, sm[1])
	}
	for _, sm := range originRE.FindAllStringSubmatch(l, -1) {
		out = append(out, sm[1])
	}
	return out
}

func isComment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }

func wordRE(name string) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(^|[^A-Za-z0-9_])%s([^A-Za-z0-9_]|$)`, regexp.QuoteMeta(name)))
}
