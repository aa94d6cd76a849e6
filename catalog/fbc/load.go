package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"

	"github.com/joelanford/ignore"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"golang.org/x/sync/errgroup"
	"golang.org/x/text/cases"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// indexIgnore names the gitignore-style files listing what a catalog
// directory holds besides the catalog, as opm reads them.
const indexIgnore = ".indexignore"

// Load reads every file-based catalog file under root, skipping what
// .indexignore files exclude, into one DeclarativeConfig equal to what
// declcfg.LoadFS returns, with blobs in file order. Errors name the file.
func Load(ctx context.Context, root fs.FS) (*declcfg.DeclarativeConfig, error) {
	return load(ctx, root, true)
}

// LoadForWrite is Load without the bundles' Objects and CsvJSON, the
// decoded copies of their olm.bundle.object properties, which the writers
// do not write: a catalog loaded to be written again holds its manifests
// once instead of twice. The objects are still decoded, and fail the load
// where Load fails.
func LoadForWrite(ctx context.Context, root fs.FS) (*declcfg.DeclarativeConfig, error) {
	return load(ctx, root, false)
}

func load(ctx context.Context, root fs.FS, keepObjects bool) (*declcfg.DeclarativeConfig, error) {
	paths, err := catalogFiles(root)
	if err != nil {
		return nil, err
	}
	parts := make([]declcfg.DeclarativeConfig, len(paths))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, path := range paths {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			data, err := fs.ReadFile(root, path)
			if err != nil {
				return err
			}
			cfg, err := loadBytes(data, keepObjects)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			parts[i] = *cfg
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := &declcfg.DeclarativeConfig{}
	for i := range parts {
		out.Packages = append(out.Packages, parts[i].Packages...)
		out.Channels = append(out.Channels, parts[i].Channels...)
		out.Bundles = append(out.Bundles, parts[i].Bundles...)
		out.Deprecations = append(out.Deprecations, parts[i].Deprecations...)
		out.Others = append(out.Others, parts[i].Others...)
	}
	return out, nil
}

// catalogFiles lists the files of a catalog in walk order.
func catalogFiles(root fs.FS) ([]string, error) {
	matcher, err := ignore.NewMatcher(root, indexIgnore)
	if err != nil {
		return nil, err
	}
	var paths []string
	err = fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() == indexIgnore || matcher.Match(path, false) {
			return nil
		}
		paths = append(paths, path)
		return nil
	})
	return paths, err
}

// LoadBytes reads one catalog file (a YAML stream or JSON objects), equal
// to declcfg.LoadReader.
func LoadBytes(data []byte) (*declcfg.DeclarativeConfig, error) {
	return loadBytes(data, true)
}

func loadBytes(data []byte, keepObjects bool) (*declcfg.DeclarativeConfig, error) {
	metas, err := readMetas(data)
	cfg, err := loadMetas(metas, err, keepObjects)
	if err == nil {
		return cfg, nil
	}
	var empty emptyDocument
	if emptyDocumentIn(data, &empty) {
		// declcfg's own message for an empty document does not say so.
		return nil, fmt.Errorf("%w (%v)", empty, err)
	}
	return nil, locate(data, err)
}

func loadMetas(metas []*declcfg.Meta, err error, keepObjects bool) (*declcfg.DeclarativeConfig, error) {
	if err != nil {
		return nil, err
	}
	var cfg declcfg.DeclarativeConfig
	for i, m := range metas {
		if err := addMeta(&cfg, m, keepObjects); err != nil {
			return nil, &docError{index: i, err: err}
		}
	}
	return &cfg, nil
}

// emptyDocumentIn tells whether the fast parser found an empty document in
// data, and where. It parses again, but only for a file that failed:
// declcfg fails on an empty document while walking or while adding what
// it made of it, so the answer is wanted past readMetas.
func emptyDocumentIn(data []byte, empty *emptyDocument) bool {
	_, err := parseYAMLStream(data, map[string]any{})
	return errors.As(err, empty)
}

// readMetas splits a file into blobs. YAML in the subset the fast parser
// knows is read by it; JSON, and YAML it does not know, the way declcfg
// reads them.
func readMetas(data []byte) ([]*declcfg.Meta, error) {
	if !utilyaml.IsJSONBuffer(data) {
		// Any error sends the file down declcfg's path, which reports it.
		if docs, err := parseYAMLStream(data, map[string]any{}); err == nil {
			metas := make([]*declcfg.Meta, 0, len(docs))
			for _, doc := range docs {
				m, err := newMeta(doc)
				if err != nil {
					break
				}
				metas = append(metas, m)
			}
			if len(metas) == len(docs) {
				return metas, nil
			}
		}
	}
	var metas []*declcfg.Meta
	err := declcfg.WalkMetasReader(bytes.NewReader(data), func(m *declcfg.Meta, err error) error {
		if err != nil {
			return &docError{index: len(metas), err: err}
		}
		metas = append(metas, m)
		return nil
	})
	return metas, err
}

var folder = cases.Fold()

// newMeta makes the Meta that declcfg's Meta.UnmarshalJSON makes of a
// document: its schema, package and name (keys matched without regard to
// case) and the document as JSON with sorted keys. It fails, and the file
// is read the way declcfg does, where declcfg would fail.
func newMeta(doc map[string]any) (*declcfg.Meta, error) {
	m := &declcfg.Meta{}
	seen := make(map[string]bool, len(doc))
	for key, v := range doc {
		f := folder.String(key)
		if seen[f] {
			return nil, errGiveUp
		}
		seen[f] = true
		var field *string
		switch f {
		case "schema":
			field = &m.Schema
		case "package":
			field = &m.Package
		case "name":
			field = &m.Name
		default:
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, errGiveUp
		}
		*field = s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, errGiveUp
	}
	m.Blob = buf.Bytes()
	return m, nil
}

// addMeta files a blob by its schema, as declcfg does.
func addMeta(cfg *declcfg.DeclarativeConfig, in *declcfg.Meta, keepObjects bool) error {
	switch in.Schema {
	case declcfg.SchemaPackage:
		var p declcfg.Package
		if err := json.Unmarshal(in.Blob, &p); err != nil {
			return fmt.Errorf("parse package: %v", err)
		}
		cfg.Packages = append(cfg.Packages, p)
	case declcfg.SchemaChannel:
		var c declcfg.Channel
		if err := json.Unmarshal(in.Blob, &c); err != nil {
			return fmt.Errorf("parse channel: %v", err)
		}
		cfg.Channels = append(cfg.Channels, c)
	case declcfg.SchemaBundle:
		var b declcfg.Bundle
		if err := json.Unmarshal(in.Blob, &b); err != nil {
			return fmt.Errorf("parse bundle: %v", err)
		}
		if err := readBundleObjects(&b); err != nil {
			return fmt.Errorf("read bundle objects: %v", err)
		}
		if !keepObjects {
			b.Objects, b.CsvJSON = nil, ""
		}
		cfg.Bundles = append(cfg.Bundles, b)
	case declcfg.SchemaDeprecation:
		var d declcfg.Deprecation
		if err := json.Unmarshal(in.Blob, &d); err != nil {
			return fmt.Errorf("parse deprecation: %w", err)
		}
		cfg.Deprecations = append(cfg.Deprecations, d)
	case "":
		return errNoSchema{blob: in.Blob}
	default:
		cfg.Others = append(cfg.Others, *in)
	}
	return nil
}

// readBundleObjects fills a bundle's Objects and CsvJSON from its
// olm.bundle.object properties, as declcfg does.
func readBundleObjects(b *declcfg.Bundle) error {
	for i, p := range b.Properties {
		if p.Type != property.TypeBundleObject {
			continue
		}
		var obj property.BundleObject
		if err := json.Unmarshal(p.Value, &obj); err != nil {
			return fmt.Errorf("package %q, bundle %q: parse property at index %d as bundle object: %v", b.Package, b.Name, i, err)
		}
		data, err := utilyaml.ToJSON(obj.Data)
		if err != nil {
			return fmt.Errorf("package %q, bundle %q: convert bundle object property at index %d to JSON: %v", b.Package, b.Name, i, err)
		}
		b.Objects = append(b.Objects, string(data))
	}
	for _, o := range b.Objects {
		if isCSV(o) {
			b.CsvJSON = o
			break
		}
	}
	return nil
}

const csvKind = "ClusterServiceVersion"

// isCSV tells whether an object is a ClusterServiceVersion the way declcfg
// finds one (its YAML parser reads the object, which needs a kind). For an
// object in plain JSON it reads the top-level kind with the JSON decoder;
// for anything the two parsers could read differently, it asks YAML.
func isCSV(obj string) bool {
	if !strings.Contains(obj, csvKind) && !strings.Contains(obj, `\u`) {
		return false
	}
	if !utilyaml.IsJSONBuffer([]byte(obj)) || !asciiNoSlashEscape(obj) {
		return isCSVYAML(obj)
	}
	kind, ok := topLevelKind(obj)
	if !ok {
		return isCSVYAML(obj)
	}
	return kind == csvKind
}

// asciiNoSlashEscape rules out what YAML reads differently from JSON in a
// JSON document: non-ASCII characters (YAML refuses some that JSON
// allows), "\/" (no YAML escape) and escaped surrogates.
func asciiNoSlashEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x7f {
			return false
		}
	}
	if strings.Contains(s, `\/`) {
		return false
	}
	for i := strings.Index(s, `\u`); i >= 0; {
		if h := s[i+2:]; len(h) >= 2 && (h[0] == 'd' || h[0] == 'D') && strings.IndexByte("89abcdefABCDEF", h[1]) >= 0 {
			return false
		}
		j := strings.Index(s[i+2:], `\u`)
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return true
}

// topLevelKind returns the string value of an object's last top-level
// "kind" key; ok is false unless obj is one valid JSON object with a kind.
func topLevelKind(obj string) (kind string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		if t == "kind" {
			var v any
			if err := dec.Decode(&v); err != nil {
				return "", false
			}
			s, isString := v.(string)
			kind, found = s, isString
			continue
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return "", false
	}
	// Nothing but spaces may follow the object.
	if _, err := dec.Token(); err != io.EOF {
		return "", false
	}
	return kind, found
}

// isCSVYAML is declcfg's test: the object read with the YAML parser into
// an unstructured object, whose kind is ClusterServiceVersion.
func isCSVYAML(obj string) bool {
	var u unstructured.Unstructured
	if err := utilyaml.Unmarshal([]byte(obj), &u); err != nil {
		return false
	}
	return u.GetKind() == csvKind
}
