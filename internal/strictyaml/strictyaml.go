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
