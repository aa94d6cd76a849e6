package extension_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// The derived installer rules are each needed: installed with all of them
// but one, operator-controller is refused, and olm v1 status and doctor
// name the rule dropped (doctor confirming with a SubjectAccessReview).
// A rule needed only to upgrade or remove the bundle lets the install
// through: those are logged; bundle/installer's API server test drives a
// whole cycle per dropped rule.
func TestEachDerivedRuleNamedWhenDropped(t *testing.T) {
	c := newClient(t)
	reg := olmtest.Registry(t)
	// How many rules there are: derived for one bundle of the shape all
	// have. Each install is of a package of its own: two would fight over
	// one CRD.
	first := olmtest.Bundle{Package: "v1drop0", Version: "0.1.0"}
	all, err := extension.DerivedRules(t.Context(), extension.InstallerRequest{Extension: "x", Namespace: "x", Bundle: extension.Bundle{Dir: first.Write(t)}})
	if err != nil {
		t.Fatal(err)
	}
	n := len(all.Cluster) + len(all.Namespaced)
	began := time.Now()
	opts := make([]extension.InstallOptions, n)
	dropped := make([]rbacv1.PolicyRule, n)
	for i := range n {
		b := olmtest.Bundle{Package: fmt.Sprintf("v1drop%d", i), Version: "0.1.0"}
		dir, ref := olmtest.PushBundle(t, reg, b, nil)
		image := olmtest.PushCatalog(t, reg+"/"+b.Package+"-catalog:1", false, olmtest.ImageBundle{Dir: dir, Ref: ref})
		opts[i] = extension.InstallOptions{Package: b.Package, Namespace: fmt.Sprintf("%s-%d", b.Package, time.Now().UnixNano()%100000), CatalogImage: image,
			InstallerRules: func(ctx context.Context, req extension.InstallerRequest) (extension.InstallerRules, error) {
				r, err := derivedRules(nil)(ctx, req)
				if err != nil {
					return r, err
				}
				if i < len(r.Cluster) {
					dropped[i], r.Cluster = r.Cluster[i], slices.Delete(slices.Clone(r.Cluster), i, i+1)
				} else {
					j := i - len(r.Cluster)
					dropped[i], r.Namespaced = r.Namespaced[j], slices.Delete(slices.Clone(r.Namespaced), j, j+1)
				}
				return r, nil
			}}
	}
	t.Logf("%d bundles and catalogs pushed in %s", n, time.Since(began).Round(10*time.Millisecond))
	names := installAll(t, c, opts)
	t.Logf("installed with a rule dropped each in %s", time.Since(began).Round(10*time.Millisecond))
	var installed []string
	for i, name := range names {
		t.Run(ruleString(dropped[i]), func(t *testing.T) {
			p, ok := waitDeniedOrInstalled(t, c, name)
			if !ok {
				installed = append(installed, ruleString(dropped[i]))
				return
			}
			if p.Missing == nil || !slices.ContainsFunc(p.Missing.Rules, func(m rbacv1.PolicyRule) bool { return covers(dropped[i], m) }) {
				t.Errorf("olm v1 status names %+v:\n%s", p.Missing, p.Fix)
			}
			ch := doctorNames(t, extension.ProblemPermissionDenied, "--extension", name)
			if ch.Check != doctor.CheckInstaller || ch.Fix != p.Fix || !strings.Contains(ch.Message, "confirmed: a SubjectAccessReview as the installer still refuses") {
				t.Errorf("doctor says %+v", ch)
			}
			t.Logf("named: %s", p.Fix)
		})
	}
	t.Logf("%d rules dropped one at a time, named in %s; %d needed only past the install: %s", n, time.Since(began).Round(10*time.Millisecond), len(installed), strings.Join(installed, "; "))
	if len(installed) == n {
		t.Errorf("no dropped rule kept the install from going through")
	}
}

// waitDeniedOrInstalled waits until the extension is installed (ok false)
// or its report names a permission problem.
func waitDeniedOrInstalled(t *testing.T, c client.Client, name string) (extension.Problem, bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last *extension.Report
	for time.Now().Before(deadline) {
		o, err := extension.Observe(t.Context(), c, name)
		if err != nil {
			t.Fatal(err)
		}
		last = o.Report()
		if last.Installed {
			return extension.Problem{}, false
		}
		if i := slices.IndexFunc(last.Problems, func(p extension.Problem) bool { return p.Kind == extension.ProblemPermissionDenied }); i >= 0 {
			return last.Problems[i], true
		}
		if ext := o.Extension; ext != nil && apimeta.IsStatusConditionPresentAndEqual(ext.Status.Conditions, extension.TypeInstalled, metav1.ConditionTrue) {
			return extension.Problem{}, false
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("neither installed nor refused after 1m:\n%s", reportText(last))
	return extension.Problem{}, false
}

// covers: the request m names is one that rule d allows.
func covers(d, m rbacv1.PolicyRule) bool {
	sub := func(small, big []string) bool {
		return len(small) > 0 && !slices.ContainsFunc(small, func(s string) bool { return !slices.Contains(big, s) && !slices.Contains(big, "*") })
	}
	if len(m.NonResourceURLs) > 0 {
		return sub(m.NonResourceURLs, d.NonResourceURLs) && sub(m.Verbs, d.Verbs)
	}
	names := len(d.ResourceNames) == 0 || len(m.ResourceNames) == 0 || sub(m.ResourceNames, d.ResourceNames)
	return sub(m.APIGroups, d.APIGroups) && sub(m.Resources, d.Resources) && sub(m.Verbs, d.Verbs) && names
}

func ruleString(r rbacv1.PolicyRule) string {
	s := fmt.Sprintf("{%s %s %s", strings.Join(r.Verbs, ","), strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","))
	if len(r.ResourceNames) > 0 {
		s += " named " + strings.Join(r.ResourceNames, ",")
	}
	return s + "}"
}
