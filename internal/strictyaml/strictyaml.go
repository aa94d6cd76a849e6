// Package strictyaml reads the YAML files users write (watches.yaml, the
// scorecard's config.yaml) into Go types strictly: keys match the types'
// json names exactly, and unknown or duplicate keys are refused.
//
// sigs.k8s.io/yaml's UnmarshalStrict goes through encoding/json, which
// matches keys case-insensitively: `ChArt:` filled Chart, and a file that
// another tool reads case-exactly meant something else there.
package strictyaml

import (
	"fmt"
	"strings"

	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Unmarshal decodes YAML data into v. An error lists every unknown key by
// its path (e.g. "[0].ChArt"); a key that differs from a known one only in
// case is unknown too.
func Unmarshal(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := sjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	if len(strict) == 0 {
		return nil
	}
	msgs := make([]string, len(strict))
	for i, e := range strict {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s (keys are case-sensitive)", strings.Join(msgs, "; "))
}
