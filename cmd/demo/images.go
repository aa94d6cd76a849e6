package demo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/podhealth"
	"github.com/chartpilot/chartpilot/olm"
)

// The journey through images, on a real node: the operator, its bundle and
// its catalog are images in the local registry, which OLM pulls and runs as
// on any cluster.

// realNode is what the image path needs of the cluster: its registry and
// the opm image it built, for the catalog image (once it started).
type realNode struct {
	registry string
	opm      string
}

func (d *demo) img(version string) string { return d.registry + "/" + project + ":v" + version }
func (d *demo) bundleImg(version string) string {
	return d.registry + "/" + project + "-bundle:v" + version
}
func (d *demo) catalogImg(version string) string {
	return d.registry + "/" + project + "-catalog:v" + version
}

// makeVars are the Makefile variables of one release's images.
func (d *demo) makeVars(version string) []string {
	return []string{"VERSION=" + version, "IMG=" + d.img(version), "BUNDLE_IMG=" + d.bundleImg(version),
		"CATALOG_IMG=" + d.catalogImg(version), "OPM_IMG=" + d.node.opm, "CHARTPILOT=" + d.opts.Binary}
}

func (d *demo) make(ctx context.Context, version string, targets ...string) error {
	_, err := d.r.run(ctx, d.projectDir, append(append([]string{"make"}, targets...), d.makeVars(version)...)...)
	return err
}

// dockerBuild builds and pushes the operator image.
func (d *demo) dockerBuild(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if _, err := d.buildImage(version)(ctx); err != nil {
			return "", err
		}
		return d.pushImage(version)(ctx)
	}
}

// buildImage builds the operator image into the image store: no registry
// needed until it is pushed.
func (d *demo) buildImage(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if err := d.make(ctx, version, "docker-build"); err != nil {
			return "", err
		}
		return "built as " + d.img(version), nil
	}
}

// pushImage pushes the operator image and notes its digest, which the
// operator's pod must run.
func (d *demo) pushImage(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if err := d.make(ctx, version, "docker-push"); err != nil {
			return "", err
		}
		digest, err := ociimage.Resolve(ctx, d.img(version))
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", d.img(version), err)
		}
		d.digests[version] = digest.String()
		return d.img(version) + "@" + digest.String(), nil
	}
}

// publishImages builds and pushes the bundle image, adds it to the catalog
// and builds and pushes the catalog image.
func (d *demo) publishImages(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if err := d.make(ctx, version, "bundle-build", "bundle-push", "catalog-build", "catalog-push"); err != nil {
			return "", err
		}
		if _, err := d.chartpilot(ctx, "catalog", "validate", "--dir", d.catalogDir); err != nil {
			return "", err
		}
		return "bundle " + d.bundleImg(version) + ", catalog " + d.catalogImg(version), nil
	}
}

// operatorPod checks that the operator runs in its pod from the image
// built for version: its digest, as a non-root user, Ready.
func (d *demo) operatorPod(version string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		var detail string
		err := poll(ctx, d.opts.Timeout, "the operator pod of v"+version+" to be Ready", func() (bool, string, error) {
			pods, err := d.cs.CoreV1().Pods(d.opts.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			var seen []string
			for i := range pods.Items {
				p := &pods.Items[i]
				id := imageID(p)
				if !strings.HasSuffix(id, d.digests[version]) {
					seen = append(seen, p.Name+" runs "+id)
					continue
				}
				if problems := podhealth.Describe(p); len(problems) > 0 || !podhealth.Ready(p) {
					return false, fmt.Sprintf("pod %s: %v", p.Name, problems), nil
				}
				uid := "unset"
				if sc := p.Spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot {
					uid = "non-root"
				}
				detail = fmt.Sprintf("pod %s Ready, image %s, %s", p.Name, id, uid)
				return true, "", nil
			}
			return false, fmt.Sprintf("no pod runs %s yet (%s)", d.digests[version], strings.Join(seen, ", ")), nil
		})
		return detail, err
	}
}

// imageID is the digest the operator container runs.
func imageID(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if strings.Contains(cs.Image, project+":") || strings.Contains(cs.ImageID, project+"@") {
			return cs.ImageID
		}
	}
	return ""
}

// scaffoldForRegistry scaffolds the project and points its sample Hello
// at the operand image in the local registry, as a user edits the sample
// when the chart's default image lives elsewhere: the scorecard and the
// CSV's example use it.
func (d *demo) scaffoldForRegistry(ctx context.Context) (string, error) {
	detail, err := d.scaffold(ctx)
	if err != nil {
		return "", err
	}
	image, err := d.operandSample()
	return detail + "; the sample runs " + image, err
}

// operandSample sets the sample's image to the local registry's operand.
func (d *demo) operandSample() (string, error) {
	sample, err := d.sample()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(sample)
	if err != nil {
		return "", err
	}
	var cr map[string]any
	if err := yaml.Unmarshal(data, &cr); err != nil {
		return "", fmt.Errorf("reading %s: %w", sample, err)
	}
	spec, _ := cr["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		cr["spec"] = spec
	}
	// The cluster publishes its images under these names when it starts.
	repo := images.Repository(d.registry, images.HelloServer)
	spec["image"] = map[string]any{"repository": repo, "tag": "local"}
	out, err := yaml.Marshal(cr)
	if err != nil {
		return "", err
	}
	return repo + ":local", os.WriteFile(sample, out, 0o644)
}

// operandReady checks that the release's pods run the operand and pass
// their readiness probe.
func (d *demo) operandReady(ctx context.Context) (string, error) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": crName}}
	var n int
	err := poll(ctx, d.opts.Timeout, "the operand's pods to be Ready", func() (bool, string, error) {
		pods, err := d.cs.CoreV1().Pods(d.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(sel)})
		if err != nil {
			return false, err.Error(), nil
		}
		n = 0
		for i := range pods.Items {
			if podhealth.Ready(&pods.Items[i]) {
				n++
			}
		}
		return n > 0 && n == len(pods.Items), podhealth.Problems(ctx, d.cs, d.opts.Namespace, sel), nil
	})
	return fmt.Sprintf("%d operand pods Ready (readiness probe answered)", n), err
}

// rollCatalog points the CatalogSource at the catalog image of version;
// OLM replaces the registry pod.
func (d *demo) rollCatalog(ctx context.Context, version string) error {
	patch := fmt.Sprintf(`{"spec":{"image":%q}}`, d.catalogImg(version))
	_, err := d.r.run(ctx, d.opts.Dir, "kubectl", "patch", "catalogsource", olm.CatalogSourceName(pkg), "-n", d.opts.Namespace, "--type", "merge", "-p", patch)
	return err
}

// nothingLeft checks that unsubscribing left no pod, Job or CSV of the
// operator in its namespace and no CRD.
func (d *demo) nothingLeft(ctx context.Context) error {
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	return poll(ctx, d.opts.Timeout, "the operator's pods, Jobs and CRD to be gone", func() (bool, string, error) {
		pods, err := d.cs.CoreV1().Pods(d.opts.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		jobs, err := d.cs.BatchV1().Jobs(d.opts.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, p := range pods.Items {
			if p.Labels["olm.catalogSource"] == "" { // the catalog's own pod goes with its CatalogSource
				left = append(left, "pod "+p.Name)
			}
		}
		for _, j := range jobs.Items {
			left = append(left, "job "+j.Name)
		}
		if _, err := d.dyn.Resource(crd).Get(ctx, helloGVR.Resource+"."+helloGVR.Group, metav1.GetOptions{}); !isNotFound(err) {
			left = append(left, "the Hello CRD")
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
}

// buildSteps make v0.1.0's images: the operator's, its bundle's and its
// catalog's, each journey through images starts with them.
func (d *demo) buildSteps() []step {
	return append(d.imageOfflineSteps(), []step{
		{"Push the operator image v0.1.0: make docker-push", d.pushImage("0.1.0")},
		{"Scorecard v0.1.0 (static and in-cluster tests); bundle again with the evidence", d.scorecard("0.1.0")},
		{"Bundle and catalog images v0.1.0: make bundle-build bundle-push catalog-build catalog-push", d.publishImages("0.1.0")},
	}...)
}

// imageOfflineSteps begin the journey through images; they need no
// cluster, only the registry's address.
func (d *demo) imageOfflineSteps() []step {
	return []step{
		{"Scaffold the operator from the hello chart: chartpilot init; the sample uses the registry's operand image", d.scaffoldForRegistry},
		{"Build the operator image v0.1.0: make docker-build", d.buildImage("0.1.0")},
		{"Generate bundle v0.1.0: make bundle", d.bundle("0.1.0")},
	}
}

// imageSteps are the journey through images and OLM v0, after the cluster
// starts.
func (d *demo) imageSteps() []step {
	return append(d.buildSteps(), []step{
		{"Subscribe with the catalog image: CatalogSource, OperatorGroup, kubectl create -f subscription.yaml", d.subscribe},
		{"The operator runs in its pod, from the image built", d.operatorPod("0.1.0")},
		{"Create a Hello; wait for Deployed and Ready, its pods answering their readiness probe", d.createCRInPods},
		{"Release v0.2.0: chart change, generate, images, bundle, scorecard with upgrade test, catalog image", d.releaseImages},
		{"OLM upgrades the CSV to v0.2.0", d.waitCSVUpgrade},
		{"The operator pod rolls to v0.2.0 and upgrades the release; nothing is lost", d.upgradeInPod},
		{"Unsubscribe: no pod, Job, CSV or CRD left", d.cleanup},
	}...)
}

func (d *demo) createCRInPods(ctx context.Context) (string, error) {
	rel, err := d.createCR(ctx)
	if err != nil {
		return "", err
	}
	pods, err := d.operandReady(ctx)
	return rel + "; " + pods, err
}

// releaseImages publishes v0.2.0 as images and points the CatalogSource
// at its catalog image.
func (d *demo) releaseImages(ctx context.Context) (string, error) {
	detail, err := d.buildRelease(ctx)
	if err != nil {
		return "", err
	}
	return detail, d.rollCatalog(ctx, "0.2.0")
}

// buildRelease publishes v0.2.0 as images: the operator's, the bundle's
// and a catalog image holding both releases.
func (d *demo) buildRelease(ctx context.Context) (string, error) {
	scored, err := d.makeRelease(ctx, d.dockerBuild("0.2.0"))
	if err != nil {
		return "", err
	}
	published, err := d.publishImages("0.2.0")(ctx)
	if err != nil {
		return "", err
	}
	d.published = time.Now()
	return scored + "; " + published, nil
}

// upgradeInPod waits for the v0.2.0 operator's pod, then for the release
// it upgrades.
func (d *demo) upgradeInPod(ctx context.Context) (string, error) {
	pod, err := d.operatorPod("0.2.0")(ctx)
	if err != nil {
		return "", err
	}
	rel, err := d.checkUpgrade(ctx)
	return pod + "; " + rel, err
}
