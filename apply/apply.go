package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/internal/monitoringcrd"
)

// FieldManager is the server-side apply field manager of chartpilot's
// writes, and the value of the managed-by label on what it creates.
const FieldManager = "chartpilot"

// DefaultTimeout bounds the wait for CRDs to become Established and served.
const DefaultTimeout = time.Minute

// Options configure Apply and Delete.
type Options struct {
	// Config reaches the cluster. Required.
	Config *rest.Config
	// Namespace is where namespaced objects without a namespace go
	// (default "default", as kubectl).
	Namespace string
	// FieldManager owns the applied fields (default FieldManager).
	FieldManager string
	// Timeout bounds each wait: for CRDs to become Established and served
	// by discovery on apply,
	// for deleted objects to be gone on delete (default DefaultTimeout).
	Timeout time.Duration
	// Wait makes Delete wait, at each step, until what it deleted is gone
	// (finalizers done) before it deletes the next step's objects, as
	// `kubectl delete --wait` does.
	Wait bool
	// Out receives one line per object, as kubectl prints (default: discarded).
	Out io.Writer
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = metav1.NamespaceDefault
	}
	if o.FieldManager == "" {
		o.FieldManager = FieldManager
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return o
}

// session holds what Apply and Delete use to reach the cluster.
type session struct {
	opts    Options
	dynamic dynamic.Interface
	// client applies through Object, on the same discovery.
	client client.Client
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newSession(opts Options) (*session, error) {
	if opts.Config == nil {
		return nil, errors.New("no cluster configuration")
	}
	opts = opts.withDefaults()
	dc, err := discovery.NewDiscoveryClientForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	c, err := client.New(opts.Config, client.Options{Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("reaching the cluster: %w", err)
	}
	return &session{opts: opts, dynamic: dyn, client: c, mapper: mapper}, nil
}

// resource is the API endpoint of obj, with its namespace defaulted.
func (c *session) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(m.Resource), m, nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = c.opts.Namespace
	}
	return c.dynamic.Resource(m.Resource).Namespace(ns), m, nil
}

// describe names obj the way kubectl prints it: kind.group/name.
func describe(obj *unstructured.Unstructured, m *meta.RESTMapping) string {
	res := obj.GetKind()
	if m != nil {
		res = m.Resource.Resource
	}
	if g := obj.GroupVersionKind().Group; g != "" {
		res += "." + g
	}
	return res + "/" + obj.GetName()
}

var crdGK = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// Apply applies objs (in the order Sort gives) with server-side apply,
// forcing ownership of conflicting fields as `kubectl apply --server-side
// --force-conflicts` does, and waits for the CRDs among them to be
// Established and their kinds served by discovery before applying the rest.
func Apply(ctx context.Context, objs []*unstructured.Unstructured, opts Options) error {
	c, err := newSession(opts)
	if err != nil {
		return err
	}
	objs = slices.Clone(objs)
	Sort(objs)
	var crds []string
	for i, obj := range objs {
		isCRD := obj.GroupVersionKind().GroupKind() == crdGK
		if !isCRD && len(crds) > 0 {
			if err := c.waitServed(ctx, crds); err != nil {
				return err
			}
			crds = nil
		}
		if err := c.apply(ctx, obj); err != nil {
			return err
		}
		if isCRD {
			crds = append(crds, obj.GetName())
			if i == len(objs)-1 {
				return c.waitServed(ctx, crds)
			}
		}
	}
	return nil
}

func (c *session) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) && gvk.Group == monitoringcrd.Group {
			// config/default ships them when ../prometheus is enabled there.
			return fmt.Errorf("applying %s: %w: the cluster has no prometheus-operator CRDs; install them, or remove ../prometheus from config/default/kustomization.yaml", describe(obj, nil), err)
		}
		return fmt.Errorf("applying %s: %w", describe(obj, nil), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace && obj.GetNamespace() == "" {
		copied, err := jsonCopy(obj)
		if err != nil {
			return fmt.Errorf("applying %s: %w", describe(obj, m), err)
		}
		obj = copied
		obj.SetNamespace(c.opts.Namespace)
	}
	outcome, err := Object(ctx, c.client, obj, c.opts.FieldManager)
	if err != nil {
		return fmt.Errorf("applying %s: %w", describe(obj, m), err)
	}
	fmt.Fprintf(c.opts.Out, "%s %s\n", describe(obj, m), outcome)
	return nil
}

// waitServed waits until each CRD is Established and discovery
// serves its kinds, then forgets the cached discovery so that they resolve.
func (c *session) waitServed(ctx context.Context, names []string) error {
	if err := crdready.Wait(ctx, c.opts.Config, names, crdready.Options{Timeout: c.opts.Timeout}); err != nil {
		return fmt.Errorf("waiting for CRDs before applying their custom resources: %w", err)
	}
	c.mapper.Reset()
	return nil
}

// Delete deletes objs in the reverse of the apply order, in steps: the
// custom resources of the CRDs among objs, then everything else but CRDs
// and Namespaces, then the CRDs, then the Namespaces. With Options.Wait,
// each step waits until its objects are gone, so that an operator still
// running handles its custom resources' finalizers before it is deleted,
// and a CRD is gone before `make install` applies it again. Objects
// already gone, or whose kind the cluster no longer serves, count as
// deleted.
func Delete(ctx context.Context, objs []*unstructured.Unstructured, opts Options) error {
	c, err := newSession(opts)
	if err != nil {
		return err
	}
	objs = slices.Clone(objs)
	Sort(objs)
	slices.Reverse(objs)
	var errs []error
	for _, step := range deleteSteps(objs) {
		deleted, err := c.deleteAll(ctx, step)
		errs = append(errs, err)
		if c.opts.Wait && len(deleted) > 0 {
			if err := c.waitGone(ctx, deleted); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
	}
	return errors.Join(errs...)
}

// deleteSteps splits objs (in delete order) into the steps Delete takes.
func deleteSteps(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	defined := map[schema.GroupKind]bool{}
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() == crdGK {
			group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
			defined[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	steps := make([][]*unstructured.Unstructured, 4)
	for _, obj := range objs {
		gk := obj.GroupVersionKind().GroupKind()
		switch {
		case defined[gk]:
			steps[0] = append(steps[0], obj)
		case gk == crdGK:
			steps[2] = append(steps[2], obj)
		case gk == schema.GroupKind{Kind: "Namespace"}:
			steps[3] = append(steps[3], obj)
		default:
			steps[1] = append(steps[1], obj)
		}
	}
	return steps
}

// deletedObject is an object Delete asked the API server to delete.
type deletedObject struct {
	ri   dynamic.ResourceInterface
	name string
	desc string
}

func (c *session) deleteAll(ctx context.Context, objs []*unstructured.Unstructured) ([]deletedObject, error) {
	var errs []error
	var deleted []deletedObject
	background := metav1.DeletePropagationBackground
	for _, obj := range objs {
		ri, m, err := c.resource(obj)
		if meta.IsNoMatchError(err) {
			fmt.Fprintf(c.opts.Out, "%s not found (its kind is not served)\n", describe(obj, nil))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", describe(obj, nil), err))
			continue
		}
		err = ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
		switch {
		case apierrors.IsNotFound(err):
			fmt.Fprintf(c.opts.Out, "%s not found\n", describe(obj, m))
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting %s: %w", describe(obj, m), err))
		default:
			fmt.Fprintf(c.opts.Out, "%s deleted\n", describe(obj, m))
			deleted = append(deleted, deletedObject{ri: ri, name: obj.GetName(), desc: describe(obj, m)})
		}
	}
	return deleted, errors.Join(errs...)
}

// waitGone waits until each object is gone; an error names what is left
// and the finalizers holding it.
func (c *session) waitGone(ctx context.Context, objs []deletedObject) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	for _, o := range objs {
		var finalizers []string
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			obj, err := o.ri.Get(ctx, o.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			finalizers = obj.GetFinalizers()
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to be deleted (finalizers %v): %w", o.desc, finalizers, err)
		}
	}
	return nil
}
