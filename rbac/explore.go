package rbac

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chartpilot/chartpilot/chart"
)

// This file varies the values that gate a chart's templates (gates.go
// finds them) so that every kind any gate can render is rendered: every
// gate is turned on in one render, each other choice of a value (an enum's
// other members, a default turned off where an else renders something) in
// the next; a render that fails is split in halves until the values that
// make it fail are found, and a `required` value a gate asks for is given a
// placeholder.

// ExploredValue is the placeholder string the derivation gives a value a
// gate needs set (a name, a secret's name, a required value). What a
// render in Result.Renders holds with it (a name, an image reference) was
// made up, not the chart's: consumers of the renders leave it out.
const ExploredValue = "chartpilot-explored"

// variant is one value tried for one value path.
type variant struct {
	Path  string
	Value any
}

func (v variant) String() string {
	switch t := v.Value.(type) {
	case bool:
		if t {
			return v.Path
		}
		return "!" + v.Path
	case nil:
		return "!" + v.Path
	case string:
		if t == "" {
			return "!" + v.Path
		}
		if t == ExploredValue {
			return v.Path // set, to a made-up value
		}
	case map[string]any:
		if len(t) == 0 {
			return "!" + v.Path
		}
		return v.Path
	case []any:
		if len(t) == 0 {
			return "!" + v.Path
		}
		return v.Path
	}
	return fmt.Sprintf("%s=%v", v.Path, v.Value)
}

// explorationPlan is the sets of variants to render, each in one render.
type explorationPlan struct {
	Sets [][]variant
}

// planExploration lists, from the gates' tests and the values they test
// (the chart's defaults under the user's values), the renders to make: the
// first turns every gate on that a value can turn on without turning
// another off; each later one is the first with other values of some paths
// (an enum's other members, a default turned off where that renders
// something else), so that each choice meets every other gate on.
func planExploration(g *chartGates, base map[string]any) explorationPlan {
	byPath := map[string][]atom{}
	for _, tg := range g.Templates {
		for _, a := range tg.Atoms {
			byPath[a.Path] = append(byPath[a.Path], a)
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	// Deeper paths first, so that x.enabled is set before x is tried.
	sort.Slice(paths, func(i, j int) bool {
		di, dj := strings.Count(paths[i], "."), strings.Count(paths[j], ".")
		if di != dj {
			return di > dj
		}
		return paths[i] < paths[j]
	})
	var first []variant
	alts := map[string][]variant{}
	maxAlts := 0
	for _, p := range paths {
		on, other := pathVariants(p, byPath[p], base, g)
		if len(on) > 0 {
			first = append(first, on[0])
			on = on[1:]
		}
		alts[p] = append(on, other...)
		maxAlts = max(maxAlts, len(alts[p]))
	}
	var plan explorationPlan
	kept, deferred := resolveConflicts(first)
	plan.add(kept)
	for k := 0; k < maxAlts; k++ {
		set := make([]variant, 0, len(first))
		for _, p := range paths {
			switch {
			case k < len(alts[p]):
				set = append(set, alts[p][k])
			case hasPath(kept, p):
				set = append(set, firstOf(kept, p))
			}
		}
		ok, _ := resolveConflicts(set)
		plan.add(ok)
	}
	for len(deferred) > 0 {
		var ok []variant
		ok, deferred = resolveConflicts(deferred)
		if len(ok) == 0 {
			break
		}
		plan.add(ok)
	}
	return plan
}

// add adds a set, sorted by path so that related values sit side by side
// (halves of a failing set keep them together).
func (p *explorationPlan) add(set []variant) {
	if len(set) == 0 {
		return
	}
	sort.SliceStable(set, func(i, j int) bool { return set[i].Path < set[j].Path })
	p.Sets = append(p.Sets, set)
}

func firstOf(set []variant, path string) variant {
	for _, v := range set {
		if v.Path == path {
			return v
		}
	}
	return variant{}
}

// resolveConflicts keeps the variants of a set that can hold together:
// x.enabled=true and x=false cannot; x=true after x.enabled=true is
// already so (x is a non-empty map). The others are deferred to the next set.
func resolveConflicts(set []variant) (kept, deferred []variant) {
	vals := map[string]any{}
	for _, v := range set {
		if cur, ok := lookupValue(vals, v.Path); ok {
			if m, isMap := cur.(map[string]any); isMap && len(m) > 0 && truthy(v.Value) {
				// Already non-empty; the fields of a skeleton are added.
				if add, isMap := v.Value.(map[string]any); isMap {
					addMissing(m, add)
				}
				continue
			}
			deferred = append(deferred, v)
			continue
		}
		if !setValue(vals, v.Path, v.Value) {
			deferred = append(deferred, v)
			continue
		}
		kept = append(kept, v)
	}
	return kept, deferred
}

// addMissing adds to dst the keys of src it lacks, recursively.
func addMissing(dst, src map[string]any) {
	for k, v := range src {
		cur, ok := dst[k]
		if !ok {
			dst[k] = v
			continue
		}
		cm, curIsMap := cur.(map[string]any)
		sm, srcIsMap := v.(map[string]any)
		if curIsMap && srcIsMap {
			addMissing(cm, sm)
		}
	}
}

// valuesOf builds the values of a set of variants.
func valuesOf(set []variant) map[string]any {
	vals := map[string]any{}
	for _, v := range set {
		setValue(vals, v.Path, v.Value)
	}
	return vals
}

// pathVariants are the values to try for one path: those that take
// branches the defaults do not and leave none they take (on), and the
// others that change what renders (other: they leave a branch with an else,
// or take one while leaving another).
func pathVariants(path string, atoms []atom, base map[string]any, g *chartGates) (on, other []variant) {
	d, _ := lookupValue(base, path)
	var lits []any // the literals the path is compared with
	for _, a := range atoms {
		if a.Op == opEq || a.Op == opNe {
			lits = append(lits, a.Lit)
		}
	}
	var tried []any
	for _, a := range atoms {
		val, ok := flipValue(a, d, path, g, lits)
		if !ok || slices.ContainsFunc(tried, func(t any) bool { return reflect.DeepEqual(t, val) }) {
			continue
		}
		if a.KindLine && val == ExploredValue {
			// An apiVersion or kind override: the chart's own is what
			// can be granted; the warning on kind values says the rest.
			continue
		}
		tried = append(tried, val)
		turnsOn, turnsOff, useful := false, false, false
		for _, b := range atoms {
			before, after := taken(b, d), taken(b, val)
			switch {
			case !before && after:
				turnsOn, useful = true, true
			case before && !after:
				turnsOff = true
				useful = useful || b.Else
			}
		}
		v := variant{Path: path, Value: val}
		switch {
		case turnsOn && !turnsOff:
			on = append(on, v)
		case useful:
			other = append(other, v)
		}
	}
	return on, other
}

// taken says whether a's branch is taken with value v.
func taken(a atom, v any) bool {
	return test(a, v) != a.Negated
}

// test evaluates a's test (without its negation) on v, as templates do.
func test(a atom, v any) bool {
	switch a.Op {
	case opTruthy:
		return truthy(v)
	case opEq:
		return equalLit(v, a.Lit)
	case opNe:
		return !equalLit(v, a.Lit)
	case opHas:
		l, _ := v.([]any)
		for _, e := range l {
			if equalLit(e, a.Lit) {
				return true
			}
		}
		return false
	}
	x, n := number(v), number(a.Lit)
	switch a.Op {
	case opGt:
		return x > n
	case opGe:
		return x >= n
	case opLt:
		return x < n
	case opLe:
		return x <= n
	}
	return false
}

// flipValue is a value of the path that makes a's test come out the other
// way than on d (its value now); lits are the literals the path is compared
// with, the choices the chart knows.
func flipValue(a atom, d any, path string, g *chartGates, lits []any) (any, bool) {
	cur := test(a, d)
	switch a.Op {
	case opTruthy:
		if cur {
			return falsyValue(d), true
		}
		return truthyValue(d, path, a.Shape, g), true
	case opEq, opNe:
		if !equalLit(d, a.Lit) {
			return a.Lit, true
		}
		for _, l := range lits {
			if !equalLit(l, a.Lit) {
				return l, true
			}
		}
		return otherThan(a.Lit), true
	case opHas:
		l, _ := d.([]any)
		if cur {
			var out []any
			for _, e := range l {
				if !equalLit(e, a.Lit) {
					out = append(out, e)
				}
			}
			return append([]any{}, out...), true
		}
		return append(append([]any{}, l...), a.Lit), true
	}
	n := number(a.Lit)
	var want float64
	switch a.Op {
	case opGt: // x > n: n+1 passes, n fails
		want = n
		if !cur {
			want = n + 1
		}
	case opGe:
		want = n - 1
		if !cur {
			want = n
		}
	case opLt:
		want = n
		if !cur {
			want = n - 1
		}
	case opLe:
		want = n + 1
		if !cur {
			want = n
		}
	default:
		return nil, false
	}
	if _, isInt := a.Lit.(int64); isInt || want == math.Trunc(want) {
		return int64(want), true
	}
	return want, true
}

// truthyValue is a non-empty value for path, shaped as the templates use
// it: a map holding the fields they read of it, a list, a string where they
// print it, else true.
func truthyValue(d any, path string, sh shape, g *chartGates) any {
	if v := g.Schemas.schemaValue(path); v != nil {
		return v
	}
	switch d.(type) {
	case string:
		return ExploredValue
	case float64, int64, int:
		return int64(1)
	case bool:
		return true
	case []any:
		return []any{elementValue(path, g)}
	}
	_, isMap := d.(map[string]any)
	isMap = isMap || g.Mapped[path]
	if sh == shapeRange || g.Ranged[path] {
		elem := elementValue(path, g)
		if isMap {
			return map[string]any{ExploredValue: elem}
		}
		return []any{elem}
	}
	if skel := skeleton(path, g); len(skel) > 0 {
		return skel
	}
	switch {
	case sh == shapeMap || isMap:
		return map[string]any{ExploredValue: map[string]any{}}
	case g.Printed[path]:
		return ExploredValue
	}
	return true
}

// elementValue is an element of the list or map at path, shaped as the
// templates that iterate over it use it: a map of the fields they read, a
// string where they use it whole, else an empty map.
func elementValue(path string, g *chartGates) any {
	if skel := skeleton(path+".*", g); len(skel) > 0 {
		return skel
	}
	if g.Templated[path+".*"] {
		return "{}" // a template that renders to nothing
	}
	if g.Printed[path+".*"] {
		return ExploredValue
	}
	return map[string]any{}
}

// skeleton is a map holding every field the templates read under path:
// lists where they iterate, else the placeholder string.
func skeleton(path string, g *chartGates) map[string]any {
	prefix := path + "."
	var subs []string
	for r := range g.Refs {
		if sub := strings.TrimPrefix(r, prefix); len(sub) < len(r) && !strings.Contains(sub, "*") {
			subs = append(subs, sub)
		}
	}
	if len(subs) == 0 {
		return nil
	}
	// Deeper paths first: a field read whole and through its own fields
	// is a map.
	sort.Slice(subs, func(i, j int) bool {
		if ci, cj := strings.Count(subs[i], "."), strings.Count(subs[j], "."); ci != cj {
			return ci > cj
		}
		return subs[i] < subs[j]
	})
	out := map[string]any{}
	for _, s := range subs {
		if _, ok := lookupValue(out, s); ok {
			continue
		}
		var leaf any = ExploredValue
		if v := g.Schemas.schemaValue(prefix + s); v != nil {
			leaf = v
		} else if g.Ranged[prefix+s] {
			leaf = []any{map[string]any{}}
		}
		setValue(out, s, leaf)
	}
	return out
}

// falsyValue is an empty value of d's type; nil deletes a map (an empty map
// would merge with the defaults and stay as it was).
func falsyValue(d any) any {
	switch d.(type) {
	case bool:
		return false
	case string:
		return ""
	case float64, int64, int:
		return int64(0)
	case []any:
		return []any{}
	}
	return nil
}

// otherThan is a value unlike lit, of its type.
func otherThan(lit any) any {
	switch t := lit.(type) {
	case bool:
		return !t
	case int64:
		return t + 1
	case float64:
		return t + 1
	case string:
		if t == ExploredValue {
			return ExploredValue + "-2"
		}
	}
	return ExploredValue
}

// truthy is Go templates' truth.
func truthy(v any) bool {
	if v == nil {
		return false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() > 0
	case reflect.Int, reflect.Int64, reflect.Int32:
		return rv.Int() != 0
	case reflect.Float64, reflect.Float32:
		return rv.Float() != 0
	}
	return true
}

// equalLit compares a value with a literal the way templates compare them
// once converted (numbers as numbers).
func equalLit(v, lit any) bool {
	switch lit.(type) {
	case int64, float64:
		switch v.(type) {
		case int64, float64, int:
			return number(v) == number(lit)
		}
		return false
	}
	return reflect.DeepEqual(v, lit)
}

// number converts a value as `int` and `float64` do in templates.
func number(v any) float64 {
	switch t := v.(type) {
	case int64:
		return float64(t)
	case int:
		return float64(t)
	case float64:
		return t
	case string:
		f, _ := strconv.ParseFloat(t, 64)
		return f
	case bool:
		if t {
			return 1
		}
	}
	return 0
}

var (
	// executionError is how Helm reports a template's failure (a required
	// value missing, a fail): where and what.
	executionError = regexp.MustCompile(`execution error at \(([^)]*)\): (.*)$`)
	// templateError is how Go templates report one (a required value under
	// a missing map: "nil pointer evaluating"), at each include on the way.
	templateError = regexp.MustCompile(`template: ([^: ]+:\d+:\d+): executing`)
)

// requiredFor finds the `required` call a render error comes from.
func requiredFor(g *chartGates, err error) (requiredCall, bool) {
	var ve *chart.ValueError
	if errors.As(err, &ve) && ve.Path != "" {
		return requiredCall{Path: ve.Path, Message: ve.Message}, true
	}
	text := helmText(err)
	var locs []string
	msg := ""
	if m := executionError.FindStringSubmatch(text); m != nil {
		locs, msg = append(locs, m[1]), strings.TrimSpace(m[2])
	}
	for _, m := range templateError.FindAllStringSubmatch(text, -1) {
		locs = append(locs, m[1])
	}
	for i := len(locs) - 1; i >= 0; i-- { // the innermost first
		for _, r := range g.Required {
			for _, l := range r.Locations {
				if l == locs[i] {
					return r, true
				}
			}
		}
	}
	for _, r := range g.Required {
		if msg != "" && r.Message == msg {
			return r, true
		}
	}
	return requiredCall{}, false
}

// maxExploreRenders bounds the renders that explore gates: each failing
// set is split in halves, which a chart whose every gate fails alone would
// make many.
const maxExploreRenders = 256

// exploreGates renders the chart with the plan's sets of values, with the
// APIs the templates probe for present.
func (d *derivation) exploreGates() error {
	plan := planExploration(d.gates, d.base)
	sets := plan.Sets
	if len(sets) == 0 && len(d.probes) > 0 {
		sets = [][]variant{nil} // the defaults, on a cluster serving the probed APIs
	}
	for _, set := range sets {
		d.exploreSet(set)
	}
	for _, path := range sortedKeys(d.gates.Passthrough) {
		d.res.Warnings = append(d.res.Warnings, Problem{Template: d.gates.Passthrough[path], Message: fmt.Sprintf("renders whole objects given in .Values.%s: their kinds are up to each custom resource, so chartpilot grants none; a custom resource that puts objects there needs a rule for each of their kinds in role.yaml", path)})
	}
	return nil
}

// exploreSet renders one set of variants. When that fails, it finds the
// variants that fail (splitting the set in halves, each half rendered), and
// renders the set without them: values that only create something together
// (metrics.enabled and metrics.serviceMonitor.enabled) stay together. A
// variant that fails even with the rest is a warning.
func (d *derivation) exploreSet(set []variant) {
	// Variants known to fail are left out of later sets.
	set = slices.DeleteFunc(slices.Clone(set), func(v variant) bool { return d.failed[v.String()] })
	if len(set) == 0 {
		return
	}
	err := d.tryRender(set)
	// A template that fails names itself: the values of the set that gate
	// it are the likely cause. They leave the set, and are tried one by
	// one with the rest once it renders.
	var removed []variant
	for err != nil {
		gating := d.gatingVariants(set, failingTemplate(err))
		if len(gating) == 0 || len(gating) == len(set) {
			break
		}
		removed = append(removed, gating...)
		set = slices.DeleteFunc(set, func(v variant) bool { return hasPath(gating, v.Path) })
		err = d.tryRender(set)
	}
	if err != nil {
		d.bisect(set, err)
		set = nil // what rendered of it, rendered
	}
	for _, v := range removed {
		d.failed[v.String()] = true
		if err := d.tryRender(append(slices.Clone(set), v)); err != nil {
			d.warnUnrendered([]variant{v}, err)
		}
	}
}

// gatingVariants are the variants of set whose paths the conditions of a
// template test.
func (d *derivation) gatingVariants(set []variant, template string) []variant {
	tg := d.gates.Templates[template]
	if tg == nil {
		return nil
	}
	var out []variant
	for _, v := range set {
		if slices.ContainsFunc(tg.Atoms, func(a atom) bool { return a.Path == v.Path }) {
			out = append(out, v)
		}
	}
	return out
}

// helmText is the text of Helm's own error in err (which names the
// templates and calls that failed), or err's.
func helmText(err error) string {
	var ve *chart.ValueError
	if errors.As(err, &ve) && ve.Err != nil {
		return ve.Err.Error()
	}
	return err.Error()
}

// failingTemplate is the template a render error names, if it names one.
func failingTemplate(err error) string {
	for _, re := range failingTemplateRE {
		if m := re.FindStringSubmatch(helmText(err)); m != nil {
			return m[1]
		}
	}
	return ""
}

var failingTemplateRE = []*regexp.Regexp{
	regexp.MustCompile(`YAML parse error on (\S+):`),
	regexp.MustCompile(`parsing the output of (\S+):`),
	regexp.MustCompile(`execution error at \(([^:)]+):`),
	regexp.MustCompile(`template: ([^: ]+):\d+:\d+: executing`),
}

// bisect finds the variants of a failing set that fail (rendering halves),
// renders the set without them, and tries each with the rest.
func (d *derivation) bisect(set []variant, err error) {
	if len(set) <= 1 {
		d.warnUnrendered(set, err)
		return
	}
	bad := map[int]error{}
	if !d.culprits(set, 0, bad, err) {
		return // both halves rendered: all that fails is every value at once
	}
	for i := range bad {
		// Later sets (other choices, with the same values around them)
		// leave out what fails here.
		d.failed[set[i].String()] = true
	}
	var rest []variant
	for i, v := range set {
		if bad[i] == nil {
			rest = append(rest, v)
		}
	}
	if len(rest) > 0 && d.tryRender(rest) != nil {
		// They fail together too: the halves rendered is what there is.
		rest = nil
	}
	for i, v := range set {
		if bad[i] == nil {
			continue
		}
		// A variant that failed alone may render with the rest (it needs
		// another value of the set); if not, it is a warning.
		if len(rest) == 0 {
			d.warnUnrendered([]variant{v}, bad[i])
			continue
		}
		if err := d.tryRender(append(slices.Clone(rest), v)); err != nil {
			d.warnUnrendered([]variant{v}, err)
		}
	}
}

// culprits renders the halves of a failing set (offset in the whole set)
// and marks in bad the smallest parts that fail: single variants, or a part
// whose halves both render, whose values fail only together. It says
// whether some half failed.
func (d *derivation) culprits(set []variant, offset int, bad map[int]error, setErr error) bool {
	half := splitPoint(set)
	found := false
	for _, part := range []struct {
		vs  []variant
		off int
	}{{set[:half], offset}, {set[half:], offset + half}} {
		err := d.tryRender(part.vs)
		if err == nil {
			continue
		}
		found = true
		if len(part.vs) == 1 || !d.culprits(part.vs, part.off, bad, err) {
			for i := range part.vs {
				bad[part.off+i] = err
			}
		}
	}
	return found
}

// splitPoint is where to halve a set sorted by path: at the change of top-
// level key (else second-level...) nearest the middle, so that the values of
// one feature (metrics.enabled, metrics.serviceMonitor.enabled) stay together.
func splitPoint(set []variant) int {
	n := len(set)
	for depth := 1; depth <= 3; depth++ {
		best := -1
		for i := 1; i < n; i++ {
			if keyPrefix(set[i].Path, depth) != keyPrefix(set[i-1].Path, depth) && (best < 0 || abs(i-n/2) < abs(best-n/2)) {
				best = i
			}
		}
		if best > 0 {
			return best
		}
	}
	return n / 2
}

// keyPrefix is the first depth keys of a dotted path.
func keyPrefix(p string, depth int) string {
	keys := strings.SplitN(p, ".", depth+1)
	if len(keys) > depth {
		keys = keys[:depth]
	}
	return strings.Join(keys, ".")
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// tryRender renders a set of variants (with placeholders for the required
// values it turns out to need), records what it creates, and returns the
// error of a render that fails.
func (d *derivation) tryRender(set []variant) error {
	// The values earlier renders were found to need go in every render
	// (unless the set chooses them): finding each again costs a render.
	var fills []variant
	for _, f := range d.fills {
		if !hasPath(set, f.Path) {
			fills = append(fills, f)
		}
	}
	for {
		if d.explored >= maxExploreRenders {
			if d.explored == maxExploreRenders {
				d.res.Warnings = append(d.res.Warnings, Problem{Message: fmt.Sprintf("chartpilot stopped exploring the chart's gates after %d renders: kinds only the rest would create are found by scanning the templates", maxExploreRenders)})
			}
			d.explored++
			return nil
		}
		d.explored++
		all := append(append([]variant(nil), fills...), set...)
		r, err := d.render(valuesOf(all), "values chartpilot explored", d.probes)
		if err == nil {
			d.explorations[r] = true
			d.seeExplored(r, all)
			return nil
		}
		fill, ok := d.fillFor(err, all)
		if !ok || len(fills) >= len(d.fills)+8 {
			return err
		}
		fills = append(fills, fill)
		d.fills = append(d.fills, fill)
	}
}

// fillFor is a value that gets a render past err, when err is a `required`
// value missing (a placeholder for it) or a `fail` under conditions (a value
// that leaves one of them): the chart asking for more than the gates being
// explored set. Values of set are never changed.
func (d *derivation) fillFor(err error, set []variant) (variant, bool) {
	if req, ok := requiredFor(d.gates, err); ok {
		v := d.gates.Schemas.schemaValue(req.Path)
		if v == nil {
			v = ExploredValue
		}
		return variant{Path: req.Path, Value: v}, !hasPath(set, req.Path)
	}
	fc, ok := failFor(d.gates, err)
	if !ok {
		return variant{}, false
	}
	vals := mergeValues(d.base, valuesOf(set))
	for i := len(fc.Guards) - 1; i >= 0; i-- { // the innermost first
		g := fc.Guards[i]
		for _, a := range g.Atoms {
			if hasPath(set, a.Path) {
				continue
			}
			cur, _ := lookupValue(vals, a.Path)
			// In the then branch the condition must fail; in the else
			// branch it must hold.
			if taken(a, cur) == g.Else {
				continue
			}
			v, ok := flipValue(a, cur, a.Path, d.gates, nil)
			if ok && taken(a, v) == g.Else {
				return variant{Path: a.Path, Value: v}, true
			}
		}
	}
	return variant{}, false
}

// failFor finds the `fail` a render error comes from.
func failFor(g *chartGates, err error) (failCall, bool) {
	m := executionError.FindStringSubmatch(helmText(err))
	if m == nil {
		return failCall{}, false
	}
	for _, f := range g.Fails {
		if f.Location == m[1] {
			return f, true
		}
	}
	return failCall{}, false
}

// warnUnrendered says a gate's value could not be rendered.
func (d *derivation) warnUnrendered(set []variant, err error) {
	for _, v := range set {
		d.failed[v.String()] = true
	}
	d.res.Warnings = append(d.res.Warnings, Problem{Message: fmt.Sprintf("could not render with %s to find what it creates (its templates were scanned instead): %v", describeSet(set), err)})
}

func hasPath(set []variant, p string) bool {
	for _, v := range set {
		if v.Path == p {
			return true
		}
	}
	return false
}

// describeSet names the values of a set, for messages.
func describeSet(set []variant) string {
	if len(set) == 0 {
		return "the default values"
	}
	names := make([]string, 0, len(set))
	for _, v := range set {
		names = append(names, v.String())
	}
	return strings.Join(names, ", ") + " set"
}

// seeExplored records what a render of a set created, each kind gated by
// the values of the set its template tests and the probed APIs it tests.
func (d *derivation) seeExplored(r *chart.Rendered, set []variant) {
	probed := map[string]bool{}
	for _, p := range d.probes {
		probed[p] = true
	}
	for _, m := range r.Objects {
		var gates []string
		if tg := d.gates.Templates[m.Source]; tg != nil {
			tested := map[string]bool{}
			for _, a := range tg.Atoms {
				tested[a.Path] = true
			}
			for _, v := range set {
				if tested[v.Path] {
					gates = append(gates, v.String())
				}
			}
			for _, p := range tg.Probes {
				if probed[p] {
					gates = append(gates, "the cluster serves "+p)
				}
			}
		}
		if len(gates) == 0 {
			gates = []string{"values chartpilot explored"}
		}
		d.see(m, gates)
	}
}

// mergeValues is over merged onto a copy of under, maps key by key.
func mergeValues(under, over map[string]any) map[string]any {
	out := make(map[string]any, len(under)+len(over))
	for k, v := range under {
		out[k] = v
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if um, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(um, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// RequiredValueError is returned by Derive when the chart's templates
// `required` a value that neither its defaults nor the user's values give.
type RequiredValueError struct {
	// Chart is the chart's name; Path the value's dotted path; Message
	// what the chart says about it.
	Chart, Path, Message string
	// Err is Helm's error.
	Err error
}

func (e *RequiredValueError) Error() string {
	return fmt.Sprintf("chart %s needs value %s (required: %q): pass --set %s=... or --values FILE", e.Chart, e.Path, e.Message, e.Path)
}

func (e *RequiredValueError) Unwrap() error { return e.Err }
