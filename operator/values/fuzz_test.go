package values

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzCompose composes a fuzzed CR spec (as JSON decodes it) with a fuzzed
// overrideValues entry. Every error is ErrInvalid and never quotes the
// override's value (it may be a secret); the CR's object is never changed;
// without overrides the values are the spec; and the digest is a function
// of the values.
func FuzzCompose(f *testing.F) {
	f.Add([]byte(`{"replicaCount":3,"image":{"tag":"from-cr"}}`), "image.tag", "v2")
	f.Add([]byte(`{}`), "list[0].name", "first")
	f.Add([]byte(`{"replicaCount":0}`), "replicaCount", "2")
	f.Add([]byte(`{"a":[1,{"b":null}],"c":1.5e300}`), "a[1].b", "x,y")
	f.Add([]byte(`null`), "x", "{a,b}")
	f.Add([]byte(`{"image":"flat"}`), "image.tag", "s3cr3t-value")
	f.Add([]byte(`{}`), "a[99999999]", "s3cr3t-value")
	ch := chartWithSchema(schema)
	f.Fuzz(func(t *testing.T, specJSON []byte, key, value string) {
		var spec any
		if json.Unmarshal(specJSON, &spec) != nil {
			return
		}
		before, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		check := func(vals map[string]any, err error, overrides map[string]string) {
			t.Helper()
			if after, _ := json.Marshal(spec); string(after) != string(before) {
				t.Fatalf("Compose changed the CR's spec: %s, was %s", after, before)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("an error that is not ErrInvalid: %v", err)
				}
				for k, v := range overrides {
					if len(v) >= 6 && !strings.Contains(k, v) && !strings.Contains(string(specJSON), v) && !strings.Contains(schema, v) && strings.Contains(err.Error(), v) {
						t.Fatalf("the error quotes the override's value %q: %v", v, err)
					}
				}
				return
			}
			if Digest(vals) != Digest(jsonRoundTrip(t, vals)) {
				t.Fatalf("the digest of %v changes through JSON", vals)
			}
		}
		vals, err := Compose(ch, spec, nil)
		check(vals, err, nil)
		if err == nil {
			want := map[string]any{}
			if spec != nil {
				want = spec.(map[string]any)
			}
			if !reflect.DeepEqual(vals, want) {
				t.Fatalf("without overrides the values are %v, the spec %v", vals, want)
			}
		}
		if strings.TrimSpace(key) == "" {
			return // refused by watches.yaml's checks
		}
		overrides := map[string]string{key: value}
		vals, err = Compose(ch, spec, overrides)
		check(vals, err, overrides)
	})
}

func jsonRoundTrip(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
