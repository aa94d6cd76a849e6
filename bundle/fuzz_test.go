package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// objectStream is kustomize output as a YAML stream.
func objectStream(t testing.TB, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes()
}

// kustomizeOutput decodes a YAML stream the way kustomizeBuild hands its
// result on (through JSON), keeping only what kustomize itself emits:
// objects with an apiVersion, a kind and a name. ok is false when the
// stream is not YAML or holds something else.
func kustomizeOutput(data []byte) (objs []*unstructured.Unstructured, ok bool) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return objs, errors.Is(err, io.EOF)
		}
		if m == nil {
			continue
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, false
		}
		o := &unstructured.Unstructured{}
		if o.UnmarshalJSON(raw) != nil || o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			return nil, false
		}
		objs = append(objs, o)
	}
}

// FuzzManifestsToCSV feeds fuzzed kustomize output of config/manifests and
// config/samples through what Generate makes of it: the sorting, the typed
// CRDs, the install strategy from the Deployments and the RBAC bound to
// them, alm-examples and the CSV. An error names the object at fault; a CSV
// made is one OLM reads back with every Deployment, and every file name an
// object gets stays inside the bundle's manifests directory.
func FuzzManifestsToCSV(f *testing.F) {
	for _, project := range []string{"webapp-operator", "validated-operator", "umbrella-operator"} {
		dir := filepath.Join("..", "scaffold", "testdata", "golden", project, "config")
		manifests, err := kustomizeBuild(filepath.Join(dir, "manifests"))
		if err != nil {
			f.Fatal(err)
		}
		samples, err := kustomizeBuild(filepath.Join(dir, "samples"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(objectStream(f, manifests), objectStream(f, samples))
	}
	f.Add([]byte(`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: m, labels: {a: b}}
spec: {template: {spec: {serviceAccountName: sa, containers: [{name: manager, image: controller:latest}], initContainers: [{name: i, image: x@sha256:00}]}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: sa}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b}
roleRef: {kind: Role, name: r}
subjects: [{kind: ServiceAccount, name: sa}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{apiGroups: [""], resources: [secrets], verbs: [list]}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa}
---
apiVersion: v1
kind: Service
metadata: {name: metrics, namespace: system}
`), []byte(nil))
	f.Fuzz(func(t *testing.T, manifests, samples []byte) {
		objs, ok := kustomizeOutput(manifests)
		if !ok {
			return
		}
		sampleObjs, ok := kustomizeOutput(samples)
		if !ok {
			return
		}
		m, err := sortManifests(objs, sampleObjs, "config/manifests")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config/manifests") {
				t.Fatalf("the error does not name the directory: %v", err)
			}
			return
		}
		if len(m.deployments) == 0 {
			return
		}
		csv := &v1alpha1.ClusterServiceVersion{}
		if m.csv != nil {
			if err := fromUnstructured(m.csv, csv); err != nil {
				mustName(t, err, m.csv)
				return
			}
		}
		crds, err := typedCRDs(m.crds)
		if err != nil {
			return
		}
		if checkSamples(m.samples, crds) != nil {
			return
		}
		strategy, consumed, err := deploymentStrategy(m, map[string]string{"controller": "example.com/op:v1"})
		if err != nil {
			return
		}
		examples, err := almExamples(m.samples)
		if err != nil {
			t.Fatalf("alm-examples of samples kustomize built: %v", err)
		}
		csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}
		csv.Spec.CustomResourceDefinitions.Owned = ownedCRDs(crds, csv.Spec.CustomResourceDefinitions.Owned, nil)
		csv.Spec.RelatedImages = relatedImages(strategy, csv.Spec.RelatedImages)
		if csv.Annotations == nil {
			csv.Annotations = map[string]string{}
		}
		csv.Annotations[AnnotationALMExamples] = examples
		csv.Annotations[AnnotationContainerImage] = containerImage(strategy)
		out, err := csvToYAML(csv)
		if err != nil {
			t.Fatalf("the CSV does not marshal: %v", err)
		}
		var back v1alpha1.ClusterServiceVersion
		if err := yaml.Unmarshal(out, &back); err != nil {
			t.Fatalf("the CSV does not read back: %v\n%s", err, out)
		}
		if got := len(back.Spec.InstallStrategy.StrategySpec.DeploymentSpecs); got != len(m.deployments) {
			t.Fatalf("the CSV has %d deployments, the manifests %d", got, len(m.deployments))
		}
		var list []any
		if err := json.Unmarshal([]byte(back.Annotations[AnnotationALMExamples]), &list); err != nil || len(list) != len(m.samples) {
			t.Fatalf("alm-examples holds %d of %d samples (%v)", len(list), len(m.samples), err)
		}
		for _, o := range slices.Concat(m.others, m.roles, m.clusterRoles, m.roleBindings, m.clusterRoleBindings, m.serviceAccounts) {
			if consumed[objectID(o)] || !bundleKinds[o.GetKind()] {
				continue
			}
			mustStayInManifests(t, manifestFileName(o), o)
		}
		for _, o := range m.crds {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
			mustStayInManifests(t, group+"_"+plural+".yaml", o)
		}
	})
}

// mustName fails unless err names o.
func mustName(t *testing.T, err error, o *unstructured.Unstructured) {
	t.Helper()
	if !strings.Contains(err.Error(), describe(o)) {
		t.Fatalf("the error does not name %s: %v", describe(o), err)
	}
}

// mustStayInManifests fails unless name is one file of the manifests
// directory.
func mustStayInManifests(t *testing.T, name string, o *unstructured.Unstructured) {
	t.Helper()
	p := path.Join(registryv1.ManifestsDir, name)
	if path.Dir(p) != registryv1.ManifestsDir || strings.ContainsAny(name, "/\\\x00") {
		t.Fatalf("%s would be written to %q, outside %s/", describe(o), p, registryv1.ManifestsDir)
	}
}

// FuzzAnnotations: annotations.yaml as written for any package and channel
// names reads back to the same names, through the bundle's reader.
func FuzzAnnotations(f *testing.F) {
	f.Add("webapp-operator", "alpha", "stable", "chartpilot")
	f.Add("p", "a,b", "", "operator-sdk-v1.41.1")
	f.Add("with: colon #and hash", "'quoted'", "\"dq\"", "yes")
	f.Add("multi\nline", "a\n", "\n\nb\n\n", " x\n  y")
	f.Fuzz(func(t *testing.T, pkg, channels, defaultChannel, builder string) {
		for _, s := range []string{pkg, channels, defaultChannel, builder} {
			if !utf8.ValidString(s) {
				return // names come from flags and files as text
			}
		}
		chs := strings.Split(channels, ",")
		ls := metadataLabels(pkg, chs, defaultChannel, builder, true)
		dir := t.TempDir()
		file := filepath.Join(dir, filepath.FromSlash(registryv1.AnnotationsFile))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, annotationsYAML(ls), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadAnnotations(dir)
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			t.Fatalf("annotations.yaml written for %q does not read back: %v\n%s", ls, err, annotationsYAML(ls))
		}
		for _, l := range ls {
			if got[l.Key] != l.Value {
				t.Fatalf("%s: wrote %q, read %q\n%s", l.Key, l.Value, got[l.Key], annotationsYAML(ls))
			}
		}
	})
}
