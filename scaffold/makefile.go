package scaffold

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
)

// A makefile is a Makefile split into the parts adopt rewires: rules (a
// target's header line and its recipe) and everything else, kept verbatim.
type makefile struct {
	parts []mkPart
}

// mkPart is a run of lines: a rule when target is set, else verbatim text.
type mkPart struct {
	target string
	// prereqs and help are the header's prerequisites and "## help" text.
	prereqs []string
	help    string
	lines   []string
}

var (
	ruleRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+)\s*:([^=].*)?$`)
	varRE  = regexp.MustCompile(`^\s*(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?|:|::|\+|!)?=`)
	refRE  = regexp.MustCompile(`\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]`)
)

func parseMakefile(data []byte) *makefile {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	m := &makefile{}
	var text []string
	flush := func() {
		if len(text) > 0 {
			m.parts = append(m.parts, mkPart{lines: text})
			text = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		sm := ruleRE.FindStringSubmatch(lines[i])
		if sm == nil || strings.HasPrefix(sm[1], ".") {
			text = append(text, lines[i])
			continue
		}
		flush()
		deps, help, _ := strings.Cut(sm[2], "##")
		p := mkPart{target: sm[1], prereqs: strings.Fields(deps), help: strings.TrimSpace(help), lines: []string{lines[i]}}
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			i++
			p.lines = append(p.lines, lines[i])
		}
		m.parts = append(m.parts, p)
	}
	flush()
	return m
}

// includes tells whether a Makefile includes the file name.
func includes(makefile []byte, name string) bool {
	return regexp.MustCompile(`(?m)^-?include\s+` + regexp.QuoteMeta(name) + `\s*$`).Match(makefile)
}

func (m *makefile) bytes() []byte {
	var b bytes.Buffer
	for _, p := range m.parts {
		for _, l := range p.lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func (m *makefile) rule(target string) *mkPart {
	for i := range m.parts {
		if m.parts[i].target == target {
			return &m.parts[i]
		}
	}
	return nil
}

// defines tells whether the Makefile assigns the variable name.
func (m *makefile) defines(name string) bool {
	for _, p := range m.parts {
		for _, l := range p.lines {
			if sm := varRE.FindStringSubmatch(l); sm != nil && sm[1] == name && !strings.HasPrefix(l, "\t") {
				return true
			}
		}
	}
	return false
}

// definition is the assignment of name in m with the comment lines just
// above it, or nil.
func (m *makefile) definition(name string) []string {
	for _, p := range m.parts {
		for i, l := range p.lines {
			if sm := varRE.FindStringSubmatch(l); sm == nil || sm[1] != name || strings.HasPrefix(l, "\t") {
				continue
			}
			start := i
			for start > 0 && strings.HasPrefix(p.lines[start-1], "#") {
				start--
			}
			return p.lines[start : i+1]
		}
	}
	return nil
}

// toolTargets download the binaries chartpilot replaces; rewired rules no
// longer depend on them (the rules themselves are left in place).
var toolTargets = []string{"kustomize", "helm-operator", "operator-sdk", "opm", "controller-gen", "manifests",
	"$(KUSTOMIZE)", "$(HELM_OPERATOR)", "$(OPERATOR_SDK)", "$(OPM)"}

// rewiring is what rewireMakefile made of a user's Makefile.
type rewiring struct {
	out []byte
	// rewired and added are targets whose recipes now run chartpilot, and
	// the targets added.
	rewired, added []string
	// removed are the variables whose definitions were removed.
	removed []removedVar
}

// why says what the rewiring changed, for adopt's report.
func (r rewiring) why() string {
	var parts []string
	if len(r.rewired) > 0 {
		parts = append(parts, "targets "+strings.Join(r.rewired, ", ")+" run chartpilot")
	}
	if len(r.added) > 0 {
		parts = append(parts, "added "+strings.Join(r.added, ", "))
	}
	if len(r.removed) > 0 {
		names := make([]string, 0, len(r.removed))
		for _, v := range r.removed {
			names = append(names, v.Name)
		}
		parts = append(parts, "removed "+strings.Join(names, ", ")+", which no longer did anything")
	}
	return strings.Join(parts, "; ") + "; your other variables and targets kept"
}

// rewireMakefile points the targets of user's Makefile that chartpilot's
// Makefile (ours) also has at chartpilot's recipes, keeping the user's
// variables, help texts, other prerequisites and other targets; it adds
// the variables the new recipes use that user lacks (above the first rule)
// and the targets user lacks (at the end). Variables that only the
// replaced recipes used are removed (see removeDeadVariables).
func rewireMakefile(user, ours []byte) rewiring {
	u, o := parseMakefile(user), parseMakefile(ours)
	var res rewiring
	var usedVars []string
	var appended []mkPart
	replaced := u.recipeVariables(o)
	for _, op := range o.parts {
		if op.target == "" {
			continue
		}
		for _, l := range op.lines[1:] {
			for _, sm := range refRE.FindAllStringSubmatch(l, -1) {
				if !slices.Contains(usedVars, sm[1]) {
					usedVars = append(usedVars, sm[1])
				}
			}
		}
		up := u.rule(op.target)
		if up == nil {
			appended = append(appended, mkPart{lines: []string{"", ".PHONY: " + op.target}}, op)
			res.added = append(res.added, op.target)
			continue
		}
		var prereqs []string
		for _, d := range up.prereqs {
			if !slices.Contains(toolTargets, d) {
				prereqs = append(prereqs, d)
			}
		}
		help := up.help
		if help == "" {
			help = op.help
		}
		header := op.target + ":"
		if len(prereqs) > 0 {
			header += " " + strings.Join(prereqs, " ")
		}
		if help != "" {
			header += " ## " + help
		}
		lines := append([]string{header}, op.lines[1:]...)
		if !slices.Equal(lines, up.lines) {
			res.rewired = append(res.rewired, op.target)
		}
		up.lines, up.prereqs = lines, prereqs
	}
	u.addVariables(o, usedVars)
	if len(appended) > 0 {
		u.parts = append(u.parts, mkPart{lines: []string{"", "##@ chartpilot"}})
		u.parts = append(u.parts, appended...)
	}
	res.removed = u.removeDeadVariables(replaced)
	res.out = u.bytes()
	return res
}

// addVariables adds the unconditional defaults (?=) of ours that the
// rewired recipes use (usedVars) and m lacks, above m's first rule, in
// the order ours defines them, so that one defined from another follows it.
func (m *makefile) addVariables(ours *makefile, usedVars []string) {
	var block []string
	for _, op := range ours.parts {
		for _, l := range op.lines {
			// Only unconditional defaults (?=) are copied: a variable set
			// inside an ifneq block would lose its condition.
			sm := varRE.FindStringSubmatch(l)
			if sm == nil || !strings.Contains(l, "?=") || strings.HasPrefix(l, "\t") || m.defines(sm[1]) || !needs(ours, sm[1], usedVars) {
				continue
			}
			if def := ours.definition(sm[1]); def != nil && !slices.Contains(block, def[len(def)-1]) {
				block = append(block, def...)
			}
		}
	}
	if len(block) == 0 {
		return
	}
	block = append([]string{"# Added by chartpilot adopt: the variables of the chartpilot targets below."}, block...)
	block = append(block, "")
	first := slices.IndexFunc(m.parts, func(p mkPart) bool { return p.target != "" })
	if first < 0 {
		first = len(m.parts)
	}
	// Before the .PHONY line and comments that belong to the first rule.
	if first > 0 && m.parts[first-1].target == "" {
		prev := &m.parts[first-1]
		cut := len(prev.lines)
		for cut > 0 && (strings.HasPrefix(prev.lines[cut-1], ".PHONY") || strings.HasPrefix(prev.lines[cut-1], "#")) {
			cut--
		}
		rest := slices.Clone(prev.lines[cut:])
		prev.lines = append(append(prev.lines[:cut:cut], block...), rest...)
	} else {
		m.parts = slices.Insert(m.parts, first, mkPart{lines: block})
	}
}

// needs tells whether a variable is used by the rewired recipes, directly
// or through another variable that is.
func needs(o *makefile, name string, used []string) bool {
	if slices.Contains(used, name) {
		return true
	}
	for _, u := range used {
		for _, l := range o.definition(u) {
			for _, sm := range refRE.FindAllStringSubmatch(l, -1) {
				if sm[1] == name && u != name {
					return true
				}
			}
		}
	}
	return false
}
