package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/crddiff"
	"github.com/chartpilot/chartpilot/crdschema"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// ErrIncompatibleVersion is returned when two versions a CRD serves would
// read the same CR differently. A Helm operator has no conversion webhook:
// the API server converts between versions by changing apiVersion alone
// (conversion strategy None), so the served versions' schemas must be
// compatible by the rules of OLM v1's upgrade-safety check (crddiff).
var ErrIncompatibleVersion = errors.New("API versions with incompatible schemas")

// A kind's API versions: the project's PROJECT lists each version of a
// kind as a resource, as operator-sdk does; watches.yaml has one entry for
// the kind, on its storage version, which is the newest added. The API
// server serves every CR in every served version, so the one watch sees
// them all; a watch per version would reconcile each CR twice, by two
// controllers, into one release. config/crd/bases holds one CRD with every
// version: the storage one generated from the chart, the others as they
// were published (their schemas are what CRs were written against).

// addVersion adds API version v to the kind that watch i serves: the CRD
// gains v as its storage version (the old ones stay served, conversion
// None), refused with the incompatible paths when the chart's schema for v
// reads existing CRs differently; the watch moves to v, PROJECT lists v, a
// sample of v is written, and the values recorded for the kind move along.
func (g *generator) addVersion(i int, v string) error {
	w := g.watches[i]
	if !version.MatchString(v) {
		return fmt.Errorf("version %q is not a Kubernetes API version (v1, v1alpha1, v2beta3...)", v)
	}
	if slices.Contains(g.versionsOf(w), v) {
		return fmt.Errorf("%s/%s %s: %w", w.Group, v, w.Kind, ErrAPIExists)
	}
	c, err := g.loadChart(w)
	if err != nil {
		return err
	}
	plural := crdschema.Plural(w.Kind)
	path := crdPath(w.Group, plural)
	old, err := g.readCRD(path)
	if err != nil {
		return err
	}
	if old == nil {
		return fmt.Errorf("%s: not found: the CRD of %s must be there to add a version to it (chartpilot generate writes it)", path, w.Kind)
	}
	gen, warnings, err := crdschema.CRD(c, crdschema.Options{Group: w.Group, Version: v, Kind: w.Kind, Plural: plural})
	if err != nil {
		return err
	}
	g.schemaWarnings(c.Name(), warnings)
	crd := withStorageVersion(old, gen.Spec.Versions[0])
	if err := compatible(path, old, crd); err != nil {
		return err
	}
	data, err := marshalCRD(crd)
	if err != nil {
		return err
	}
	next := w
	next.Version = v
	rd := g.resourceData(next, c.Name())
	sample, err := sampleCR(c, rd)
	if err != nil {
		return err
	}
	files := map[string][]byte{path: data, "config/samples/" + rd.Group + "_" + v + "_" + rd.Lower + ".yaml": sample}
	oldValues := ValuesFile(w)
	recorded, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(oldValues)))
	switch {
	case err == nil:
		files[ValuesFile(next)] = recorded
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if err := g.writeFiles(files); err != nil {
		return err
	}
	if recorded != nil {
		if err := os.Remove(filepath.Join(g.dir, filepath.FromSlash(oldValues))); err != nil {
			return err
		}
	}
	g.watches[i] = next
	// The new version's resource is the kind's, another version; a
	// project whose PROJECT does not list the kind (adopted) gets one.
	res := Resource{API: &ResourceAPI{CRDVersion: "v1", Namespaced: true}, Domain: g.project.Domain, Kind: w.Kind,
		Group: strings.TrimSuffix(strings.TrimSuffix(w.Group, g.project.Domain), ".")}
	for _, r := range g.project.Resources {
		if r.FullGroup() == w.Group && r.Kind == w.Kind {
			res = r
		}
	}
	res.Version = v
	g.project.Resources = append(g.project.Resources, res)
	return nil
}

// withStorageVersion is crd with version nv added as its storage version:
// the others stay as they are, served as they were, no longer stored.
func withStorageVersion(crd *apiextensionsv1.CustomResourceDefinition, nv apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	out.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	for j := range out.Spec.Versions {
		out.Spec.Versions[j].Storage = false
	}
	nv.Served, nv.Storage = true, true
	out.Spec.Versions = append(out.Spec.Versions, nv)
	out.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return out
}

// compatible refuses a CRD whose served versions read a CR differently
// (crddiff's served-version rules) where old did not.
func compatible(path string, old, crd *apiextensionsv1.CustomResourceDefinition) error {
	var served []crddiff.Change
	for _, ch := range crddiff.Compare(old, crd) {
		if ch.Scope == crddiff.ScopeServed {
			served = append(served, ch)
		}
	}
	if len(served) == 0 {
		return nil
	}
	var b bytes.Buffer
	_ = crddiff.WriteText(&b, served)
	return fmt.Errorf("%s: %w: without a conversion webhook (a Helm operator has none) the API server only changes a CR's apiVersion between versions, so every version must read the CRs of the others:\n%s",
		path, ErrIncompatibleVersion, strings.TrimRight(b.String(), "\n"))
}

// versionsOf are the API versions of w's kind that PROJECT lists, in its
// order, w's own included. A kind that several watches serve (an
// operator-sdk project with a chart per version) has only its watch's.
func (g *generator) versionsOf(w watches.Watch) []string {
	n := 0
	for _, o := range g.watches {
		if o.Group == w.Group && o.Kind == w.Kind {
			n++
		}
	}
	if n > 1 {
		return []string{w.Version}
	}
	var out []string
	for _, r := range g.project.Resources {
		if r.FullGroup() == w.Group && r.Kind == w.Kind && !slices.Contains(out, r.Version) {
			out = append(out, r.Version)
		}
	}
	if !slices.Contains(out, w.Version) {
		out = append(out, w.Version)
	}
	return out
}

// migratedCRDs are the CRDs of w's kind whose CRs the operator migrates to
// the storage version: those with more than one version (the kind's, and
// its backup kinds' when the project has them).
func (g *generator) migratedCRDs(w watches.Watch, pending map[string][]byte) []string {
	if len(g.versionsOf(w)) < 2 {
		return nil
	}
	out := []string{crdschema.Plural(w.Kind) + "." + w.Group}
	if g.hasBackupAPI(w, pending) {
		grants := backupapi.RestoreGrantResource(w.GroupVersionKind())
		for _, crd := range backupapi.CRDs(w.GroupVersionKind()) {
			// Migrating rewrites every object of the CRD, and the operator
			// must never write a grant: the grant CRD is left as it is.
			if crd.Name != grants.Resource+"."+grants.Group {
				out = append(out, crd.Name)
			}
		}
	}
	return out
}

// crdWithVersions is the CRD of w's kind as config/crd/bases holds it:
// gen (the chart's schema, for w's version, the storage one) and, when
// PROJECT lists other versions of the kind, each of them as path has it.
// A version path has that PROJECT no longer lists is dropped, with a note.
func (g *generator) crdWithVersions(w watches.Watch, gen *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	path := crdPath(w.Group, gen.Spec.Names.Plural)
	versions := g.versionsOf(w)
	old, err := g.readCRD(path)
	if len(versions) == 1 && (err != nil || old == nil || len(old.Spec.Versions) == 1) {
		return gen, nil // one version: the chart's, whatever the file was
	}
	if err != nil {
		return nil, err
	}
	if old == nil {
		return nil, fmt.Errorf("%s: not found: PROJECT lists versions %s of %s, whose schemas only this file holds", path, strings.Join(versions, ", "), w.Kind)
	}
	out := gen.DeepCopy()
	out.Spec.Versions = nil
	for _, v := range versions {
		if v == w.Version {
			out.Spec.Versions = append(out.Spec.Versions, gen.Spec.Versions[0])
			continue
		}
		j := slices.IndexFunc(old.Spec.Versions, func(ov apiextensionsv1.CustomResourceDefinitionVersion) bool { return ov.Name == v })
		if j < 0 {
			return nil, fmt.Errorf("%s: PROJECT lists version %s of %s, which this CRD does not have (chartpilot create api --version %s adds a version)", path, v, w.Kind, v)
		}
		kept := old.Spec.Versions[j]
		kept.Storage = false
		out.Spec.Versions = append(out.Spec.Versions, kept)
	}
	for _, ov := range old.Spec.Versions {
		if !slices.Contains(versions, ov.Name) {
			fmt.Fprintf(g.opts.Out, "note: %s: version %s dropped (PROJECT no longer lists it): publish this only once no cluster stores CRs in it (chartpilot olm migrate; olm preflight and OLM check status.storedVersions)\n", path, ov.Name)
		}
	}
	if len(out.Spec.Versions) > 1 {
		out.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	if err := compatible(path, old, out); err != nil {
		return nil, err
	}
	return out, nil
}

// withVersions gives a CRD generated for one version (the storage one,
// the watch's) every version of versions, with the same schema: the
// backup kinds' CRDs follow the versions of their kind.
func withVersions(crd *apiextensionsv1.CustomResourceDefinition, versions []string) *apiextensionsv1.CustomResourceDefinition {
	if len(versions) < 2 {
		return crd
	}
	out := crd.DeepCopy()
	storage := crd.Spec.Versions[0]
	out.Spec.Versions = nil
	for _, v := range versions {
		nv := *storage.DeepCopy()
		nv.Name, nv.Storage = v, v == storage.Name
		out.Spec.Versions = append(out.Spec.Versions, nv)
	}
	out.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return out
}

// readCRD reads a CRD of the project; nil when the file is absent.
func (g *generator) readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(path)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" || len(crd.Spec.Versions) == 0 {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition with versions", path)
	}
	return crd, nil
}

// marshalCRD is a CRD as config/crd/bases holds it: neither the creation
// time nor the status is the author's to write.
func marshalCRD(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	out = bytes.Replace(out, []byte("  creationTimestamp: null\n"), nil, 1)
	out = bytes.Replace(out, []byte("status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"), nil, 1)
	return out, nil
}

// crdPath is where a CRD is in config/crd/bases.
func crdPath(group, plural string) string {
	return "config/crd/bases/" + group + "_" + plural + ".yaml"
}

// chartCRD is the CRD of w's kind from chart c, with all its versions.
func (g *generator) chartCRD(c *chart.Chart, rd resourceData, w watches.Watch) ([]byte, error) {
	gen, err := g.crdFor(c, rd)
	if err != nil {
		return nil, err
	}
	crd, err := g.crdWithVersions(w, gen)
	if err != nil {
		return nil, err
	}
	return marshalCRD(crd)
}

// existingKind is the index of the watch of the kind a (create api) names
// when the project serves it already, else -1. Without a chart, a kind
// left out is the project's only one. A kind served in several groups is
// told apart by a's group.
func (g *generator) existingKind(a APIOptions) (int, error) {
	if a.Kind == "" {
		if a.Chart != "" {
			return -1, nil // the kind comes from the chart: a new one
		}
		if len(g.watches) != 1 {
			return -1, fmt.Errorf("the project serves %d kinds: name the one to add version %s of with --kind", len(g.watches), a.Version)
		}
		return 0, nil
	}
	var found []int
	for i, w := range g.watches {
		if w.Kind == a.Kind {
			found = append(found, i)
		}
	}
	if len(found) > 1 && a.Group != "" {
		full := a.Group + "." + g.project.Domain
		found = slices.DeleteFunc(found, func(i int) bool { return g.watches[i].Group != full })
	}
	switch len(found) {
	case 0:
		return -1, nil
	case 1:
		return found[0], nil
	}
	return -1, fmt.Errorf("kind %s is served in %d groups: name the group with --group", a.Kind, len(found))
}
