package edit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/validate"
)

// exampleBundle writes a small registry+v1 bundle directory.
func exampleBundle(root, version string) string {
	dir := filepath.Join(root, "bundle-"+version)
	files := map[string]string{
		"metadata/annotations.yaml": `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.package.v1: memcached-operator
  operators.operatorframework.io.bundle.channels.v1: stable
`,
		"manifests/csv.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: memcached-operator.v` + version + `
spec:
  version: ` + version + `
  installModes: [{type: AllNamespaces, supported: true}]
  install: {strategy: deployment, spec: {deployments: []}}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte(content), 0o644)
	}
	return dir
}

// Publish three releases, the last an older patch, and see where they land.
func Example() {
	root, _ := os.MkdirTemp("", "catalog-example-")
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "catalog")

	if err := edit.Init(context.Background(), edit.InitOptions{Dir: dir, Package: "memcached-operator", DefaultChannel: "stable"}); err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range []string{"0.1.0", "0.2.0", "0.1.1"} {
		res, err := edit.Add(context.Background(), edit.AddOptions{Dir: dir, BundleDir: exampleBundle(root, v)})
		if err != nil {
			fmt.Println(err)
			return
		}
		p := res.Placements[0]
		fmt.Printf("%s: head=%v replaces=%q skipRange=%q\n", res.Bundle, p.Head, p.Replaces, p.SkipRange)
	}
	if err := validate.FS(context.Background(), dir, os.DirFS(dir)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("valid")
	// Output:
	// memcached-operator.v0.1.0: head=true replaces="" skipRange=""
	// memcached-operator.v0.2.0: head=true replaces="memcached-operator.v0.1.0" skipRange=">=0.1.0 <0.2.0"
	// memcached-operator.v0.1.1: head=false replaces="memcached-operator.v0.1.0" skipRange=">=0.1.0 <0.1.1"
	// valid
}
