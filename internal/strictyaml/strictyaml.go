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
	"unicode"

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
	hint := ""
	for i, e := range strict {
		msgs[i] = e.Error()
		if capitalized(msgs[i]) {
			hint = " (keys are case-sensitive)"
		}
	}
	return fmt.Errorf("%s%s", strings.Join(msgs, "; "), hint)
}

// capitalized reports whether the key that msg, an unknown field error,
// names starts with an upper-case letter: the files' keys never do, so
// its case is the likely mistake.
func capitalized(msg string) bool {
	path := strings.TrimSuffix(msg[strings.Index(msg, `"`)+1:], `"`)
	key := path[strings.LastIndexAny(path, ".]")+1:]
	return key != "" && unicode.IsUpper([]rune(key)[0])
}
