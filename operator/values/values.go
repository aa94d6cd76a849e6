package values

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/strvals"
)

// ErrInvalid marks values that can never be installed as they are: a schema
// violation, a spec that is not an object, a bad override. Retrying without a
// change to the CR cannot help.
var ErrInvalid = errors.New("invalid values")

// Compose returns the values to install ch with: spec (the CR's .spec, nil
// allowed) with overrides applied as `helm --set key=value` in key order.
// Chart defaults are not merged in here: Helm coalesces them itself, and the
// release records only what the user supplied. The result is validated
// against the chart's schema (with the defaults coalesced).
func Compose(ch *chart.Chart, spec any, overrides map[string]string) (map[string]any, error) {
	vals := map[string]any{}
	switch s := spec.(type) {
	case nil:
	case map[string]any:
		// A deep copy through JSON: the CR's object must not be mutated by
		// the overrides, and JSON numbers become what Helm expects.
		data, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("%w: spec: %v", ErrInvalid, err)
		}
		if err := json.Unmarshal(data, &vals); err != nil {
			return nil, fmt.Errorf("%w: spec: %v", ErrInvalid, err)
		}
	default:
		return nil, fmt.Errorf("%w: spec is a %T, not an object", ErrInvalid, spec)
	}
	keys := slices.Sorted(maps.Keys(overrides))
	for _, k := range keys {
		// Helm 4 drops some malformed keys ("a[") without an error: a key
		// that sets nothing on its own is refused too.
		probe := map[string]any{}
		err := strvals.ParseInto(k+"="+overrides[k], probe)
		if err == nil && len(probe) > 0 {
			err = strvals.ParseInto(k+"="+overrides[k], vals)
		}
		if err != nil || len(probe) == 0 {
			// Helm's parse error quotes the value, which may be a secret:
			// name the key only.
			return nil, fmt.Errorf("%w: overrideValues key %q: not in helm --set syntax", ErrInvalid, k)
		}
	}
	if err := Validate(ch, vals); err != nil {
		return nil, err
	}
	return vals, nil
}

// Validate checks vals, coalesced with the chart's defaults, against the
// chart's values.schema.json (and its subcharts'). Its error names the
// fields and the rules they break, never a value.
func Validate(ch *chart.Chart, vals map[string]any) error {
	full, err := valuesutil.CoalesceValues(ch, vals)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// Helm's report quotes the values that fail a pattern or a format:
	// only its verdict is kept.
	if err := valuesutil.ValidateAgainstSchema(ch, full); err != nil {
		return fmt.Errorf("%w: values.schema.json: %s", ErrInvalid, schemaReport(ch, full))
	}
	return nil
}

// oneLine folds Helm's multi-line schema report into one line for a
// condition message: "app: - at '/a': x - at '/b': y" -> "app: at '/a': x; at '/b': y".
func oneLine(s string) string {
	var parts []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if line != "" {
			parts = append(parts, line)
		}
	}
	if len(parts) > 1 && strings.HasSuffix(parts[0], ":") {
		return parts[0] + " " + strings.Join(parts[1:], "; ")
	}
	return strings.Join(parts, "; ")
}

// Digest identifies values: equal values, equal digest, whatever the key order.
func Digest(vals map[string]any) string {
	data, err := json.Marshal(vals) // maps marshal with sorted keys
	if err != nil {
		// Values come from JSON or YAML and always marshal.
		panic(fmt.Sprintf("values digest: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
