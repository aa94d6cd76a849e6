package fbc

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

// WriteJSON writes cfg as declcfg.WriteJSON does. That writer is already
// cheap (encoding/json with an indent), so this one is it: it exists so
// that callers take both formats from one package.
func WriteJSON(cfg declcfg.DeclarativeConfig, w io.Writer) error {
	return declcfg.WriteJSON(cfg, w)
}

// WriteYAML writes cfg with the same bytes as declcfg.WriteYAML, blob by
// blob in the same order, about ten times faster.
//
// declcfg encodes each blob to JSON, parses that JSON with yaml.v2 into
// generic maps and marshals them with yaml.v2. This writer encodes the
// same JSON, then emits the YAML straight from it with yaml.v2's rules for
// key order, scalar styles, indentation and line folding (see emit.go).
// A blob holding anything those rules are not written for here (a
// non-ASCII or control character, a float, a long or multi-line key, ...)
// goes through yaml.v2 as in declcfg, so the output is equal for every
// input; the differential tests and the fuzzer check it.
func WriteYAML(cfg declcfg.DeclarativeConfig, w io.Writer) error {
	_, err := writeYAML(cfg, w)
	return err
}

// writeYAML is WriteYAML; it tells tests how many blobs took yaml.v2's
// path.
func writeYAML(cfg declcfg.DeclarativeConfig, w io.Writer) (fallbacks int, err error) {
	if !yamlWrapsAt80() {
		// Something in this process turned yaml.v2's line folding off
		// (yaml.FutureLineWrap); the emitter folds at 80 columns.
		return -1, declcfg.WriteYAML(cfg, w)
	}
	enc := &yamlBlobEncoder{w: w}
	enc.json = json.NewEncoder(&enc.jsonBuf)
	enc.json.SetEscapeHTML(false)
	err = writeBlobs(cfg, enc)
	return enc.fallbacks, err
}

// yamlBlobEncoder turns one blob into a YAML document.
type yamlBlobEncoder struct {
	w       io.Writer
	jsonBuf bytes.Buffer
	json    *json.Encoder
	em      emitter
	// fallbacks counts the blobs that took yaml.v2's path.
	fallbacks int
}

func (e *yamlBlobEncoder) encode(v any) error {
	e.jsonBuf.Reset()
	if err := e.json.Encode(v); err != nil {
		return err
	}
	e.em.out = append(e.em.out[:0], "---\n"...)
	if !e.em.document(e.jsonBuf.Bytes()) {
		// The slow path of declcfg, for the blobs the emitter does not
		// handle.
		e.fallbacks++
		y, err := yaml.JSONToYAML(e.jsonBuf.Bytes())
		if err != nil {
			return err
		}
		e.em.out = append(e.em.out[:len("---\n")], y...)
	}
	_, err := e.w.Write(e.em.out)
	return err
}

// writeBlobs encodes the blobs of cfg in declcfg's order: packages by
// name, each with its olm.package, its channels and bundles sorted by name
// (with the same unstable sort, so that equal names keep declcfg's order),
// its other blobs stably by schema and its deprecations; then the blobs
// of no package in their order.
func writeBlobs(cfg declcfg.DeclarativeConfig, enc *yamlBlobEncoder) error {
	names, byPkg, rootOthers := SplitByPackage(cfg)
	for _, name := range sets.List(names) {
		c := byPkg[name]
		sort.Slice(c.Channels, func(i, j int) bool { return c.Channels[i].Name < c.Channels[j].Name })
		sort.Slice(c.Bundles, func(i, j int) bool { return c.Bundles[i].Name < c.Bundles[j].Name })
		sort.SliceStable(c.Others, func(i, j int) bool { return c.Others[i].Schema < c.Others[j].Schema })
		for i := range c.Packages {
			if err := enc.encode(c.Packages[i]); err != nil {
				return err
			}
		}
		for i := range c.Channels {
			if err := enc.encode(c.Channels[i]); err != nil {
				return err
			}
		}
		for i := range c.Bundles {
			if err := enc.encode(c.Bundles[i]); err != nil {
				return err
			}
		}
		for i := range c.Others {
			if err := enc.encode(c.Others[i]); err != nil {
				return err
			}
		}
		for i := range c.Deprecations {
			if err := enc.encode(c.Deprecations[i]); err != nil {
				return err
			}
		}
	}
	for i := range rootOthers {
		if err := enc.encode(rootOthers[i]); err != nil {
			return err
		}
	}
	return nil
}

// SplitByPackage groups the blobs of cfg by package name into fresh
// slices (the caller's are not reordered), skipping blobs with an empty
// package name the way declcfg does, except other blobs, which go to the
// root list.
func SplitByPackage(cfg declcfg.DeclarativeConfig) (sets.Set[string], map[string]*declcfg.DeclarativeConfig, []declcfg.Meta) {
	names := sets.New[string]()
	byPkg := map[string]*declcfg.DeclarativeConfig{}
	get := func(name string) *declcfg.DeclarativeConfig {
		names.Insert(name)
		c := byPkg[name]
		if c == nil {
			c = &declcfg.DeclarativeConfig{}
			byPkg[name] = c
		}
		return c
	}
	for _, p := range cfg.Packages {
		if p.Name != "" {
			c := get(p.Name)
			c.Packages = append(c.Packages, p)
		}
	}
	for _, ch := range cfg.Channels {
		if ch.Package != "" {
			c := get(ch.Package)
			c.Channels = append(c.Channels, ch)
		}
	}
	for _, b := range cfg.Bundles {
		if b.Package != "" {
			c := get(b.Package)
			c.Bundles = append(c.Bundles, b)
		}
	}
	var rootOthers []declcfg.Meta
	for _, o := range cfg.Others {
		if o.Package == "" {
			rootOthers = append(rootOthers, o)
			continue
		}
		c := get(o.Package)
		c.Others = append(c.Others, o)
	}
	for _, d := range cfg.Deprecations {
		if d.Package != "" {
			c := get(d.Package)
			c.Deprecations = append(c.Deprecations, d)
		}
	}
	return names, byPkg, rootOthers
}

// yamlWrapsAt80 reports whether yaml.v2 folds long plain scalars at 80
// columns, its default, which yaml.FutureLineWrap turns off for the whole
// process.
func yamlWrapsAt80() bool {
	y, err := yaml.Marshal(map[string]string{"k": strings.Repeat("word ", 20)})
	return err == nil && bytes.Count(y, []byte{'\n'}) == 2
}
