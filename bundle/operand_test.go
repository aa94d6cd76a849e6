package bundle

import (
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/chart/charttest"
	"github.com/chartpilot/chartpilot/rbac"
)

// Every image reference of every render is found, with where: pod specs,
// args, env, ConfigMap data, CR fields; images behind a value gate as
// surely as their RBAC is granted; not `helm test` hooks, CRD schemas or
// strings that only look like references.
func TestOperandImages(t *testing.T) {
	pod := func(name, image, hook string) string {
		ann := ""
		if hook != "" {
			ann = "\n  annotations:\n    helm.sh/hook: " + hook
		}
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + ann + "\nspec:\n  containers: [{name: " + name + ", image: " + image + "}]\n"
	}
	c := charttest.Load(t, map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: images\nversion: 0.1.0\n",
		"values.yaml":              "cache:\n  enabled: false\n",
		"templates/app.yaml":       pod("app", "example.com/app:1", ""),
		"templates/cache.yaml":     "{{- if .Values.cache.enabled }}\n" + pod("cache", "example.com/cache:2", "") + "{{- end }}\n",
		"templates/migrate.yaml":   pod("migrate", "example.com/migrate:1", "pre-upgrade"),
		"templates/test-conn.yaml": pod("test-conn", "example.com/busybox:1", "test"),
		"templates/controller.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
spec:
  selector: {matchLabels: {app: c}}
  template:
    metadata: {labels: {app: c}}
    spec:
      topologySpreadConstraints: [{topologyKey: kubernetes.io/hostname, maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]
      initContainers:
      - name: init
        image: busybox
        command: [sh, -c, "cp /bin/x /shared/ && echo localhost:8080"]
      containers:
      - name: manager
        image: quay.io/acme/controller:v1.2.0
        imagePullPolicy: IfNotPresent
        args:
        - --acme-solver-image=quay.io/acme/solver:v1.2.0
        - -configmapServerImage=registry.example.com/tools/cm-server@sha256:` + strings.Repeat("a", 64) + `
        - --executor-image
        - executor:v3
        - --metrics-addr=:8080
        - --docs=https://example.com/docs/image:v1
        - --config=/etc/acme/config.yaml
        - --leader-election-id=acme.example.com
        env:
        - name: SIDECAR_IMAGE
          value: ghcr.io/acme/sidecar
        - name: HTTP_PROXY_TARGET
          value: proxy.internal:3128
        - name: NOTES
          value: see docker.io/acme/notes:2024.1 for notes
        - name: IMAGE_PULL_SECRET
          value: regcred
`,
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: config
  annotations:
    app.kubernetes.io/part-of: acme/platform
data:
  config.yaml: |
    image: "mirror.example.com/acme/worker:3.1"
    url: http://example.com:8080/path
    listen: 0.0.0.0:9090
    level: info
    plugins: [acme/plugin:latest]
  version: "1.2.3"
`,
		"templates/catalog.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: acme-catalog
spec:
  sourceType: grpc
  image: quay.io/acme/catalog-index:v4
`,
		"templates/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.acme.example.com
spec:
  group: acme.example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: "the image to run, e.g. quay.io/acme/example:v1"
`,
	})
	r, err := rbac.Derive(rbac.Options{Chart: c, Owner: rbac.Owner{Group: "charts.example.com", Resource: "images"}})
	if err != nil {
		t.Fatal(err)
	}
	found := operandImages(r.Renders)
	got := map[string]FoundImage{}
	for _, f := range found {
		got[f.Image] = f
	}
	want := map[string]struct{ name, field string }{
		"example.com/app:1":              {"app", "spec.containers[0].image"},
		"example.com/cache:2":            {"cache", "spec.containers[0].image"},
		"example.com/migrate:1":          {"migrate", "spec.containers[0].image"},
		"busybox":                        {"init", "spec.template.spec.initContainers[0].image"},
		"quay.io/acme/controller:v1.2.0": {"manager", "spec.template.spec.containers[0].image"},
		"quay.io/acme/solver:v1.2.0":     {"acme-solver-image", "spec.template.spec.containers[0].args[0]"},
		"registry.example.com/tools/cm-server@sha256:" + strings.Repeat("a", 64): {"configmap-server-image", "spec.template.spec.containers[0].args[1]"},
		"executor:v3":                        {"executor-image", "spec.template.spec.containers[0].args[3]"},
		"ghcr.io/acme/sidecar":               {"sidecar-image", "spec.template.spec.containers[0].env[0].value"},
		"docker.io/acme/notes:2024.1":        {"notes", "spec.template.spec.containers[0].env[2].value"},
		"mirror.example.com/acme/worker:3.1": {"worker", `data["config.yaml"]`},
		"acme/plugin:latest":                 {"plugin", `data["config.yaml"]`},
		"quay.io/acme/catalog-index:v4":      {"catalog-index", "spec.image"},
	}
	for image, w := range want {
		f, ok := got[image]
		if !ok {
			t.Errorf("%s not found", image)
			continue
		}
		if f.Name != w.name || len(f.Where) == 0 || f.Where[0].Field != w.field {
			t.Errorf("%s: name %q, where %+v; want name %q, field %q", image, f.Name, f.Where, w.name, w.field)
		}
	}
	for image, f := range got {
		if _, ok := want[image]; !ok {
			t.Errorf("%s found (%s), not an image the chart runs", image, f)
		}
	}
	// Where says which template and object.
	if f := got["quay.io/acme/catalog-index:v4"]; len(f.Where) != 1 || f.Where[0].Template != "images/templates/catalog.yaml" || f.Where[0].Object != "CatalogSource/acme-catalog" {
		t.Errorf("catalog index found at %+v", f.Where)
	}
	// Renders repeat objects: each place is listed once.
	if f := got["example.com/app:1"]; len(f.Where) != 1 {
		t.Errorf("app image found at %+v", f.Where)
	}
}

func TestImageRef(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("0", 64)
	tests := []struct {
		tok    string
		hinted bool
		want   bool
	}{
		{tok: "quay.io/org/app:v1", want: true},
		{tok: "org/app:1.2.3", want: true},
		{tok: "localhost:5000/app:v1", want: true},
		{tok: "app" + digest, want: true},
		{tok: "quay.io/org/app" + digest, want: true},
		{tok: "nginx:1.25", want: false},
		{tok: "nginx:1.25", hinted: true, want: true},
		{tok: "quay.io/org/app", want: false},
		{tok: "quay.io/org/app", hinted: true, want: true},
		{tok: "nginx", hinted: true, want: false},
		{tok: "redis-master:6379", want: false},
		{tok: "svc/thing:8080", want: false},
		{tok: "https://quay.io/org/app:v1", want: false},
		{tok: "/etc/app/config:ro", want: false},
		{tok: "./charts/app:1", want: false},
		{tok: "kubernetes.io/hostname", want: false},
		{tok: "IfNotPresent", hinted: true, want: false},
		{tok: "Org/App:v1", want: false},
		{tok: "sha256:abc", want: false},
		{tok: "system:serviceaccount:ns:sa", want: false},
		{tok: "{{.Values.image}}", want: false},
		{tok: "1.2.3", hinted: true, want: false},
	}
	for _, tt := range tests {
		if _, got := imageRef(tt.tok, tt.hinted); got != tt.want {
			t.Errorf("imageRef(%q, hinted %v) = %v, want %v", tt.tok, tt.hinted, got, tt.want)
		}
	}
}

func TestRelatedName(t *testing.T) {
	for _, tt := range []struct{ suggested, image, want string }{
		{"manager", "quay.io/x/op:v1", "manager"},
		{"--acme-solver-image", "quay.io/x/solver:v1", "acme-solver-image"},
		{"-configmapServerImage", "x/y:1", "configmap-server-image"},
		{"RELATED_IMAGE_PROXY", "x/proxy:1", "proxy"},
		{"image", "quay.io/x/catalog-index:v4", "catalog-index"},
		{"", "localhost:5000/a/b" + "@sha256:" + strings.Repeat("0", 64), "b"},
	} {
		if got := relatedName(tt.suggested, tt.image); got != tt.want {
			t.Errorf("relatedName(%q, %q) = %q, want %q", tt.suggested, tt.image, got, tt.want)
		}
	}
}

func TestIsTestHook(t *testing.T) {
	for hook, want := range map[string]bool{
		"": false, "test": true, "test-success": true, "pre-install,test": true, "pre-install, post-upgrade": false,
	} {
		if got := isTestHook(hook); got != want {
			t.Errorf("isTestHook(%q) = %v, want %v", hook, got, want)
		}
	}
}
