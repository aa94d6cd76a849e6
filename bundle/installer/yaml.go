package installer

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// WriteYAML writes the ServiceAccount, roles and bindings as one YAML
// stream for `kubectl create -f`.
func (r *RBAC) WriteYAML(w io.Writer) error {
	for _, o := range r.Objects() {
		data, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
