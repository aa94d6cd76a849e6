package scorecard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// errNoCluster means the chartpilot suite was selected without a cluster.
var errNoCluster = errors.New("no cluster: the chartpilot suite installs the bundle into one; pass --kubeconfig (or deselect the suite: -l 'suite!=chartpilot')")

// pollInterval is how often a wait looks at the cluster again.
const pollInterval = 200 * time.Millisecond

// clusterRun is one cluster test's world: the admin's clients, a fresh
// namespace, the requests the operator was refused, and a stack of cleanups
// that runs whatever happened.
type clusterRun struct {
	opts   Options
	res    *result
	crds   *crdSet
	ns     string
	kube   kubernetes.Interface
	ext    apiextensionsclient.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	denied forbiddenRecorder

	mu       sync.Mutex
	cleanups []cleanup
	// rbac undoes the ServiceAccount permissions of the installed bundle.
	rbac func(context.Context) error
	// stuck are the CRs the operator failed to uninstall: their cleanup
	// does not wait for the operator again.
	stuck map[string]bool
	// running counts the operators running: without one, nothing will
	// uninstall a deleted CR's release.
	running int
	// metricsAddr, when set, is where the operators serve their metrics.
	metricsAddr string
	// moverImage, when set, is the image of the operators' mover pods.
	moverImage string
	// podDenied are the refusals the operator's pods logged (with
	// Options.OperatorFromImage).
	podDenied []string
	// watchAlso are namespaces of the test's that the operator watches
	// besides ns, with the CSV's permissions there too (as OLM grants them
	// in each target namespace of an OperatorGroup).
	watchAlso []string
}

// watched are the namespaces the operator watches.
func (c *clusterRun) watched() []string { return append([]string{c.ns}, c.watchAlso...) }

type cleanup struct {
	what string
	do   func(context.Context) error
	// first cleanups run before all others: custom resources are deleted
	// while an operator still runs to uninstall their releases.
	first bool
}

// newClusterRun makes the namespace of a test named name. The caller must
// call finish, even when this fails.
func newClusterRun(ctx context.Context, run *run, name string, res *result) (*clusterRun, error) {
	c := &clusterRun{opts: run.opts, res: res, crds: run.crds, stuck: map[string]bool{}}
	cfg := run.opts.Config
	if cfg == nil {
		return c, errNoCluster
	}
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.ext, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return c, err
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	ns, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "scorecard-" + name + "-", Labels: map[string]string{"app.kubernetes.io/created-by": "chartpilot-scorecard"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return c, fmt.Errorf("creating the test namespace: %w", err)
	}
	c.ns = ns.Name
	res.logf("namespace %s", c.ns)
	c.onCleanup("namespace "+c.ns, func(ctx context.Context) error {
		// Not waited for: on a bare API server nothing finalizes namespaces.
		return ignoreNotFound(c.kube.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{}))
	})
	return c, nil
}

// onCleanup pushes a cleanup; finish runs them last-pushed first.
func (c *clusterRun) onCleanup(what string, do func(context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, cleanup{what: what, do: do})
}

// onCleanupFirst pushes a cleanup that runs before those of onCleanup.
func (c *clusterRun) onCleanupFirst(what string, do func(context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, cleanup{what: what, do: do, first: true})
}

// finish runs the cleanups with a context of their own, so that they run
// even when the test's ended. A cleanup that fails turns a pass into an
// error: the cluster was left with something of the test's.
func (c *clusterRun) finish() {
	// Each cleanup may wait up to WaitTime (a CR uninstalled, a CRD gone).
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.opts.WaitTime)
	defer cancel()
	c.mu.Lock()
	var cleanups []cleanup
	for _, first := range []bool{false, true} {
		for _, cl := range c.cleanups {
			if cl.first == first {
				cleanups = append(cleanups, cl)
			}
		}
	}
	c.cleanups = nil
	c.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		if err := cleanups[i].do(ctx); err != nil {
			c.res.Errors = append(c.res.Errors, fmt.Sprintf("cleanup of %s: %v", cleanups[i].what, err))
			if c.res.State == v1alpha3.PassState {
				c.res.State = v1alpha3.ErrorState
			}
		}
	}
}

// installBundle installs the bundle's CRDs and its CSV's ServiceAccounts
// and permissions into the test namespace, as OLM would for an operator
// watching its own namespace. It returns the ServiceAccount the operator
// runs as. A second call (the upgrade) replaces the permissions.
func (c *clusterRun) installBundle(ctx context.Context, b *Bundle) (string, error) {
	m, err := b.manifests()
	if err != nil {
		return "", err
	}
	crds, err := b.v1CRDs()
	if err != nil {
		return "", err
	}
	for _, crd := range crds {
		if err := c.acquireCRD(ctx, crd); err != nil {
			return "", err
		}
	}
	c.mapper.Reset()
	sa, err := operatorServiceAccount(m.CSV)
	if err != nil {
		return "", err
	}
	if c.rbac != nil {
		if err := c.rbac(ctx); err != nil {
			return "", fmt.Errorf("removing the previous bundle's permissions: %w", err)
		}
	}
	undo, err := c.grant(ctx, m.CSV)
	c.rbac = undo
	if err != nil {
		return "", err
	}
	return sa, nil
}

// acquireCRD holds crd for this test in the Run's CRD set (see crdSet):
// created or updated by the first test that needs it, deleted after the last.
func (c *clusterRun) acquireCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	held, err := c.crds.acquire(ctx, c.ext, crd, c.res.logf)
	if held {
		name := crd.Name
		c.onCleanup("CRD "+name, func(ctx context.Context) error { return c.crds.release(ctx, c.ext, name) })
	}
	return err
}

// operatorServiceAccount is the ServiceAccount the CSV's operator runs as.
func operatorServiceAccount(csv *v1alpha1.ClusterServiceVersion) (string, error) {
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" {
			return sa, nil
		}
	}
	for _, p := range slices.Concat(csv.Spec.InstallStrategy.StrategySpec.Permissions, csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions) {
		if p.ServiceAccountName != "" {
			return p.ServiceAccountName, nil
		}
	}
	return "", fmt.Errorf("CSV %s names no ServiceAccount: set spec.install.spec.deployments[0].spec.template.spec.serviceAccountName and the permissions' serviceAccountName", csv.Name)
}

// grant creates the CSV's ServiceAccounts, a Role and RoleBinding per
// permission in the test namespace and a ClusterRole and binding per
// cluster permission, as OLM does. undo deletes them.
func (c *clusterRun) grant(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (undo func(context.Context) error, err error) {
	spec := csv.Spec.InstallStrategy.StrategySpec
	var undos []func(context.Context) error
	undo = func(ctx context.Context) error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			errs = append(errs, undos[i](ctx))
		}
		undos = nil
		return errors.Join(errs...)
	}
	sas := map[string]bool{}
	for _, p := range slices.Concat(spec.Permissions, spec.ClusterPermissions) {
		sas[p.ServiceAccountName] = true
	}
	if sa, err := operatorServiceAccount(csv); err == nil {
		sas[sa] = true
	}
	for sa := range sas {
		_, err := c.kube.CoreV1().ServiceAccounts(c.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return undo, fmt.Errorf("creating ServiceAccount %s: %w", sa, err)
		}
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: c.ns}}
	}
	for i, p := range spec.Permissions {
		for _, ns := range c.watched() {
			if err := c.grantIn(ctx, ns, csv.Name, i, p, subject(p.ServiceAccountName), &undos); err != nil {
				return undo, err
			}
		}
	}
	for i, p := range spec.ClusterPermissions {
		// Cluster-wide names carry the test namespace: unique per test.
		name := fmt.Sprintf("%s-%s-%d", c.ns, p.ServiceAccountName, i)
		roles, bindings := c.kube.RbacV1().ClusterRoles(), c.kube.RbacV1().ClusterRoleBindings()
		if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules}, metav1.CreateOptions{}); err != nil {
			return undo, fmt.Errorf("creating the ClusterRole of CSV %s clusterPermissions[%d]: %w", csv.Name, i, err)
		}
		undos = append(undos, func(ctx context.Context) error {
			return ignoreNotFound(roles.Delete(ctx, name, metav1.DeleteOptions{}))
		})
		if _, err := bindings.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject(p.ServiceAccountName),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		}, metav1.CreateOptions{}); err != nil {
			return undo, fmt.Errorf("binding the ClusterRole of CSV %s clusterPermissions[%d]: %w", csv.Name, i, err)
		}
		undos = append(undos, func(ctx context.Context) error {
			return ignoreNotFound(bindings.Delete(ctx, name, metav1.DeleteOptions{}))
		})
	}
	c.onCleanup("permissions of "+csv.Name, func(ctx context.Context) error {
		if c.rbac == nil {
			return nil
		}
		return c.rbac(ctx)
	})
	c.res.logf("granted CSV %s's permissions to ServiceAccount(s) %s", csv.Name, strings.Join(sortedSet(sas), ", "))
	return undo, nil
}

// grantIn creates the Role and RoleBinding of a CSV's permissions[i] in
// namespace ns, and pushes their deletion on undos.
func (c *clusterRun) grantIn(ctx context.Context, ns, csv string, i int, p v1alpha1.StrategyDeploymentPermissions, subjects []rbacv1.Subject, undos *[]func(context.Context) error) error {
	name := fmt.Sprintf("%s-%d", p.ServiceAccountName, i)
	roles, bindings := c.kube.RbacV1().Roles(ns), c.kube.RbacV1().RoleBindings(ns)
	if _, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Role of CSV %s permissions[%d] in namespace %s: %w", csv, i, ns, err)
	}
	*undos = append(*undos, func(ctx context.Context) error {
		return ignoreNotFound(roles.Delete(ctx, name, metav1.DeleteOptions{}))
	})
	if _, err := bindings.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding the Role of CSV %s permissions[%d] in namespace %s: %w", csv, i, ns, err)
	}
	*undos = append(*undos, func(ctx context.Context) error {
		return ignoreNotFound(bindings.Delete(ctx, name, metav1.DeleteOptions{}))
	})
	return nil
}

// runningOperator is the operator runtime started by startOperator.
type runningOperator struct {
	watches []watches.Watch
	stop    func() error
}

// startOperator runs the operator of bundle b and its project: from its
// image with Options.OperatorFromImage, else in this process.
func (c *clusterRun) startOperator(ctx context.Context, b *Bundle, projectDir, sa string) (*runningOperator, error) {
	if !c.opts.OperatorFromImage {
		return c.startOperatorInProcess(projectDir, sa)
	}
	m, err := b.manifests()
	if err != nil {
		return nil, err
	}
	return c.startOperatorPods(ctx, m.CSV, projectDir)
}

// startOperatorInProcess runs chartpilot's operator in-process on the
// project's watches.yaml and charts, as ServiceAccount sa of the test
// namespace, watching that namespace. Every request it makes passes the
// forbidden recorder.
func (c *clusterRun) startOperatorInProcess(projectDir, sa string) (*runningOperator, error) {
	ws, err := watches.Load(filepath.Join(projectDir, "watches.yaml"), watches.Options{})
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", projectDir, err)
	}
	cfg := rest.CopyConfig(c.opts.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + c.ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + c.ns, "system:authenticated"},
	}
	cfg.Wrap(c.denied.wrap)
	mgr, err := operator.New(operator.Options{
		Watches: ws, Config: cfg, Namespaces: c.watched(),
		MetricsBindAddress: cmp.Or(c.metricsAddr, "0"), HealthProbeBindAddress: "0",
		Log:                c.opts.Log.WithValues("namespace", c.ns),
		SkipNameValidation: true, // one after another, for the same kinds
		MoverImage:         c.moverImage,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	c.mu.Lock()
	c.running++
	c.mu.Unlock()
	var once sync.Once
	var stopErr error
	op := &runningOperator{watches: ws, stop: func() error {
		once.Do(func() {
			cancel()
			stopErr = <-done
			c.mu.Lock()
			c.running--
			c.mu.Unlock()
		})
		return stopErr
	}}
	c.onCleanup("the operator", func(context.Context) error { return op.stop() })
	c.res.logf("operator started from %s as ServiceAccount %s", projectDir, sa)
	return op, nil
}

// createCRs creates the alm-examples in the test namespace. Their cleanup
// deletes them while the operator still runs, so that it uninstalls their
// releases, and strips the finalizers of those still there after WaitTime.
func (c *clusterRun) createCRs(ctx context.Context, crs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if len(crs) == 0 {
		return nil, fmt.Errorf("the CSV has no %s: nothing to install", almExamples)
	}
	var out []*unstructured.Unstructured
	for _, cr := range crs {
		ri, err := c.resource(cr.GroupVersionKind(), c.ns)
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", cr.GetKind(), cr.GetName(), err)
		}
		obj := cr.DeepCopy()
		obj.SetNamespace(c.ns)
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return out, fmt.Errorf("creating %s %s: %w", cr.GetKind(), cr.GetName(), err)
		}
		out = append(out, created)
		name := created.GetName()
		c.onCleanupFirst(cr.GetKind()+" "+name, func(ctx context.Context) error {
			if err := ignoreNotFound(ri.Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
				return err
			}
			c.mu.Lock()
			wait := !c.stuck[name] && c.running > 0
			c.mu.Unlock()
			err := errors.New("no operator uninstalls it")
			if wait {
				err = c.poll(ctx, func(ctx context.Context) (bool, error) {
					_, err := ri.Get(ctx, name, metav1.GetOptions{})
					return apierrors.IsNotFound(err), nil
				})
			}
			if err == nil {
				return nil
			}
			// The operator could not uninstall: let the namespace go anyway.
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			return ignoreNotFoundResult(ri.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}))
		})
		c.res.logf("created %s %s", cr.GetKind(), name)
	}
	return out, nil
}

// resource is the dynamic client of a kind, in namespace ns if it is
// namespaced.
func (c *clusterRun) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster does not serve %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

// crState is what the runtime says about a CR.
type crState struct {
	conditions []metav1.Condition
	release    *reconciler.DeployedRelease
}

func (s crState) condition(typ string) *metav1.Condition {
	return meta.FindStatusCondition(s.conditions, typ)
}

func (s crState) is(typ string) bool {
	cond := s.condition(typ)
	return cond != nil && cond.Status == metav1.ConditionTrue
}

// String shows the conditions that tell why a CR is not where it should be.
func (s crState) String() string {
	var parts []string
	for _, typ := range []string{reconciler.TypeDeployed, reconciler.TypeReady, reconciler.TypeReleaseFailed, reconciler.TypeIrreconcilable} {
		cond := s.condition(typ)
		if cond == nil {
			parts = append(parts, typ+" not set")
			continue
		}
		p := fmt.Sprintf("%s=%s", typ, cond.Status)
		if cond.Status != metav1.ConditionFalse || typ == reconciler.TypeDeployed || typ == reconciler.TypeReady {
			if cond.Reason != "" || cond.Message != "" {
				p += fmt.Sprintf(" (%s: %s)", cond.Reason, cond.Message)
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func stateOf(obj *unstructured.Unstructured) crState {
	var st reconciler.Status
	if m, ok := obj.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
	}
	return crState{conditions: st.Conditions, release: st.DeployedRelease}
}

// waitDeployed waits until each CR is Deployed and Ready and ok (if not
// nil) accepts its state. A CR found Irreconcilable ends the wait at once:
// the runtime will not retry it.
func (c *clusterRun) waitDeployed(ctx context.Context, crs []*unstructured.Unstructured, ok func(crState) bool) (map[string]crState, error) {
	began := time.Now()
	states := map[string]crState{}
	var last error
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		last = nil
		for _, cr := range crs {
			ri, err := c.resource(cr.GroupVersionKind(), c.ns)
			if err != nil {
				return false, err
			}
			cur, err := ri.Get(ctx, cr.GetName(), metav1.GetOptions{})
			if err != nil {
				last = fmt.Errorf("%s %s: %w", cr.GetKind(), cr.GetName(), err)
				return false, nil
			}
			st := stateOf(cur)
			states[cr.GetName()] = st
			if st.is(reconciler.TypeIrreconcilable) {
				return false, fmt.Errorf("%s %s is Irreconcilable: %s", cr.GetKind(), cr.GetName(), st)
			}
			if !st.is(reconciler.TypeDeployed) || !st.is(reconciler.TypeReady) || (ok != nil && !ok(st)) {
				last = fmt.Errorf("%s %s: %s", cr.GetKind(), cr.GetName(), st)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && last != nil && wait.Interrupted(err) {
		return states, fmt.Errorf("not Deployed and Ready after %s: %w", c.opts.WaitTime, last)
	}
	if err != nil {
		return states, err
	}
	c.res.logf("%d custom resource(s) Deployed and Ready after %s", len(crs), time.Since(began).Round(10*time.Millisecond))
	return states, nil
}

// poll runs cond until it is done, fails, or WaitTime passes.
func (c *clusterRun) poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, pollInterval, c.opts.WaitTime, true, cond)
}

// objectRef names an object of a release.
type objectRef struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (o objectRef) String() string {
	if o.namespace == "" {
		return o.gvk.Kind + " " + o.name
	}
	return o.gvk.Kind + " " + o.namespace + "/" + o.name
}

// releaseObjects reads a release's last deployed revision from Helm's
// storage (Secrets in the release's namespace) and lists its objects.
func (c *clusterRun) releaseObjects(name string) (revision int, objs []objectRef, err error) {
	rels, err := c.deployedRecords(name)
	if err == nil && len(rels) == 0 {
		err = driver.ErrReleaseNotFound
	}
	if err != nil {
		return 0, nil, fmt.Errorf("release %s: %w", name, err)
	}
	rel := rels[0]
	for _, r := range rels[1:] {
		if r.Version > rel.Version {
			rel = r
		}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.GetKind() == "" {
			continue
		}
		objs = append(objs, objectRef{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()})
	}
	return rel.Version, objs, nil
}

// deployedRecords reads the deployed revisions of release name from Helm's
// storage.
func (c *clusterRun) deployedRecords(name string) ([]*helmrelease.Release, error) {
	store := driver.NewSecrets(c.kube.CoreV1().Secrets(c.ns))
	found, err := store.Query(map[string]string{"name": name, "owner": "helm", "status": "deployed"})
	if err != nil {
		return nil, err
	}
	rels := make([]*helmrelease.Release, 0, len(found))
	for _, r := range found {
		rel, ok := r.(*helmrelease.Release)
		if !ok {
			return nil, fmt.Errorf("release %s: a record of type %T", name, r)
		}
		rels = append(rels, rel)
	}
	return rels, nil
}

// exists tells whether an object of a release is in the cluster.
func (c *clusterRun) exists(ctx context.Context, o objectRef) (bool, error) {
	ns := o.namespace
	if ns == "" {
		ns = c.ns
	}
	ri, err := c.resource(o.gvk, ns)
	if err != nil {
		return false, err
	}
	_, err = ri.Get(ctx, o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// releaseStored tells whether Helm's storage still has any revision of the
// release.
func (c *clusterRun) releaseStored(name string) (bool, error) {
	_, err := driver.NewSecrets(c.kube.CoreV1().Secrets(c.ns)).Query(map[string]string{"name": name, "owner": "helm"})
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return false, nil
	}
	return err == nil, err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ignoreNotFoundResult[T any](_ T, err error) error { return ignoreNotFound(err) }

func retryConflict(ctx context.Context, f func() error) error {
	for {
		err := f()
		if !apierrors.IsConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pollInterval):
		}
	}
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
