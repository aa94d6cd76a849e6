package extension

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/olm"
)

// InstallResult reports what Install did.
type InstallResult struct {
	Objects []olm.ObjectResult `json:"objects"`
	// Bundle is the bundle OLM v1 is expected to install, when it was
	// resolved (see Prepare).
	Bundle *Bundle `json:"bundle,omitempty"`
	// Notes say what the install left out or chose, and why.
	Notes []string `json:"notes,omitempty"`
}

// Prepare builds the plan of opts. It reads what the cluster's OLM v1
// takes (Features) unless opts says; resolves the bundle OLM v1 will
// install in the catalog (opts.CatalogImage, else the images of the
// cluster's catalogs that c finds) where its install modes or the
// installer's rules depend on it; and derives those rules where the
// cluster installs as an installer ServiceAccount. c may be nil (a dry run
// without a cluster): the namespace is then taken as missing, the features
// as LegacyFeatures.
func Prepare(ctx context.Context, c client.Client, opts InstallOptions) (*Plan, error) {
	// The features first: whether opts needs installer rules depends on them.
	if opts.Features == nil {
		f := LegacyFeatures
		if c != nil {
			var err error
			if f, err = ReadFeatures(ctx, c); err != nil {
				return nil, fmt.Errorf("install: %w", err)
			}
		}
		opts.Features = &f
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	nsExists, err := namespaceExists(ctx, c, opts.Namespace)
	if err != nil {
		return nil, err
	}
	var bundle *Bundle
	var notes []string
	if opts.derivesRules() || opts.Features.Config || opts.WatchNamespace != "" {
		if bundle, err = resolveInstall(ctx, c, opts); err != nil {
			return nil, err
		}
		watch, note, err := chooseWatchNamespace(opts, *opts.Features, bundle)
		if err != nil {
			return nil, err
		}
		opts.WatchNamespace = watch
		if note != "" {
			notes = append(notes, note)
		}
	}
	var rules *InstallerRules
	if opts.derivesRules() {
		r, err := deriveRules(ctx, opts.InstallerRules, InstallerRequest{Extension: opts.Name, Namespace: opts.Namespace, Bundle: *bundle})
		if err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		rules = &r
	}
	plan, err := NewPlan(opts, rules, nsExists)
	if err != nil {
		return nil, err
	}
	plan.Bundle = bundle
	plan.Notes = append(plan.Notes, notes...)
	return plan, nil
}

// namespaceExists says whether the install namespace exists; false
// without a cluster.
func namespaceExists(ctx context.Context, c client.Client, namespace string) (bool, error) {
	if c == nil {
		return false, nil
	}
	var ns corev1.Namespace
	switch err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("install: namespace %s: %w", namespace, err)
	}
}

// resolveInstall resolves the bundle OLM v1 will install for opts.
func resolveInstall(ctx context.Context, c client.Client, opts InstallOptions) (*Bundle, error) {
	cfg, err := catalogContent(ctx, c, opts.CatalogImage, opts.CatalogSelector)
	if err != nil {
		return nil, fmt.Errorf("install: reading the catalog to resolve the bundle: %w", err)
	}
	bundle, err := Resolve(cfg, Selection{Package: opts.Package, Version: opts.Version, Channels: opts.Channels})
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	return bundle, nil
}

// deriveRules unpacks the request's bundles into a temporary directory
// and calls derive.
func deriveRules(ctx context.Context, derive InstallerRulesFunc, req InstallerRequest) (InstallerRules, error) {
	dir, err := os.MkdirTemp("", "chartpilot-bundles-*")
	if err != nil {
		return InstallerRules{}, err
	}
	defer os.RemoveAll(dir)
	if err := UnpackBundle(ctx, &req.Bundle, dir); err != nil {
		return InstallerRules{}, err
	}
	if req.Previous != nil {
		if err := UnpackBundle(ctx, req.Previous, dir); err != nil {
			return InstallerRules{}, err
		}
	}
	rules, err := derive(ctx, req)
	if err != nil {
		return InstallerRules{}, fmt.Errorf("the installer's rules for %s: %w", req.Bundle.Name, err)
	}
	return rules, nil
}

// catalogContent loads the catalog of image or, when image is empty, the
// content of the cluster's ClusterCatalogs matching selector, merged, each
// read from the image catalogd resolved.
func catalogContent(ctx context.Context, c client.Client, image, selector string) (*declcfg.DeclarativeConfig, error) {
	if image != "" {
		return LoadCatalogImage(ctx, image)
	}
	if c == nil {
		return nil, errors.New("without a catalog image the cluster's ClusterCatalogs are read, and there is no cluster")
	}
	cats, err := listCatalogs(ctx, c, selector)
	if err != nil {
		return nil, err
	}
	if len(cats) == 0 {
		return nil, fmt.Errorf("no ClusterCatalog matches %q", selector)
	}
	merged := &declcfg.DeclarativeConfig{}
	for _, cat := range cats {
		ref := catalogImageRef(&cat)
		if ref == "" {
			continue
		}
		cfg, err := LoadCatalogImage(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("ClusterCatalog %s: %w", cat.Name, err)
		}
		merged.Merge(cfg)
	}
	return merged, nil
}

// catalogImageRef is the image catalogd unpacked (by digest), else the
// one the spec names.
func catalogImageRef(cat *Catalog) string {
	if rs := cat.Status.ResolvedSource; rs != nil && rs.Image != nil && rs.Image.Ref != "" {
		return rs.Image.Ref
	}
	if cat.Spec.Source.Image != nil {
		return cat.Spec.Source.Image.Ref
	}
	return ""
}

// listCatalogs lists the ClusterCatalogs matching a label selector.
func listCatalogs(ctx context.Context, c client.Client, selector string) ([]Catalog, error) {
	sel := labels.Everything()
	if selector != "" {
		var err error
		if sel, err = labels.Parse(selector); err != nil {
			return nil, fmt.Errorf("catalog selector %q: %w", selector, err)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GroupVersion.WithKind(CatalogKind + "List"))
	if err := c.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing ClusterCatalogs: %w", err)
	}
	out := make([]Catalog, 0, len(list.Items))
	for i := range list.Items {
		var cat Catalog
		if err := fromUnstructured(&list.Items[i], &cat); err != nil {
			return nil, err
		}
		out = append(out, cat)
	}
	return out, nil
}

// Install applies the plan of opts (see Prepare) with server-side apply:
// running it again changes nothing.
func Install(ctx context.Context, c client.Client, opts InstallOptions) (*InstallResult, error) {
	plan, err := Prepare(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	objs, err := plan.Objects()
	if err != nil {
		return nil, err
	}
	res := &InstallResult{Bundle: plan.Bundle, Notes: plan.Notes}
	for _, u := range objs {
		done, err := olm.Apply(ctx, c, u)
		if err != nil {
			return res, fmt.Errorf("install: %w", err)
		}
		res.Objects = append(res.Objects, done)
	}
	return res, nil
}

func objectName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// getExtension reads a ClusterExtension; nil when it does not exist.
func getExtension(ctx context.Context, c client.Client, name string) (*Extension, error) {
	u := newUnstructured(ExtensionKind)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ClusterExtension %s: %w", name, err)
	}
	var ext Extension
	if err := fromUnstructured(u, &ext); err != nil {
		return nil, err
	}
	return &ext, nil
}

// getCatalog reads a ClusterCatalog; nil when it does not exist.
func getCatalog(ctx context.Context, c client.Client, name string) (*Catalog, error) {
	u := newUnstructured(CatalogKind)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ClusterCatalog %s: %w", name, err)
	}
	var cat Catalog
	if err := fromUnstructured(u, &cat); err != nil {
		return nil, err
	}
	return &cat, nil
}
