package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// Content is one catalog as catalogd stores and serves it: the JSON Lines
// stream of its metas, and an index of the metas by schema, package and
// name for the metas endpoint. It is read-only once loaded, so that one
// Content serves any number of requests at once.
type Content struct {
	// data is every meta's line, in walk order: the /api/v1/all body.
	data []byte
	// metas are the lines of data, in order.
	metas []line
	// withSchema, bySchema, byPackage and byName hold indexes into metas,
	// ascending. A meta is in a map only under a non-empty value, and in
	// withSchema when it has a schema.
	withSchema                  []int32
	bySchema, byPackage, byName map[string][]int32
	// modTime is when the catalog was loaded (catalogd's is when it stored
	// the catalog): the Last-Modified of every answer.
	modTime time.Time
}

// line is one meta's place in Content.data.
type line struct{ offset, length int }

// Load reads the catalog rooted at fsys the way catalogd stores a catalog
// image's content: operator-registry's declcfg.WalkMetasFS, one file at a
// time in path order, each meta as declcfg.Meta encodes it.
func Load(ctx context.Context, fsys fs.FS) (*Content, error) {
	c := &Content{
		bySchema:  map[string][]int32{},
		byPackage: map[string][]int32{},
		byName:    map[string][]int32{},
	}
	var buf bytes.Buffer
	err := declcfg.WalkMetasFS(ctx, fsys, func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		c.add(m, buf.Len())
		buf.Write(m.Blob)
		return nil
	}, declcfg.WithConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("loading catalog: %w", err)
	}
	// Keep exactly the stream: the buffer's spare capacity can be nearly
	// as large again.
	c.data = make([]byte, buf.Len())
	copy(c.data, buf.Bytes())
	c.modTime = time.Now()
	return c, nil
}

// add indexes m, whose line starts at offset.
func (c *Content) add(m *declcfg.Meta, offset int) {
	i := int32(len(c.metas))
	c.metas = append(c.metas, line{offset: offset, length: len(m.Blob)})
	if m.Schema != "" {
		c.withSchema = append(c.withSchema, i)
		c.bySchema[m.Schema] = append(c.bySchema[m.Schema], i)
	}
	if m.Package != "" {
		c.byPackage[m.Package] = append(c.byPackage[m.Package], i)
	}
	if m.Name != "" {
		c.byName[m.Name] = append(c.byName[m.Name], i)
	}
}

// Bytes is the whole stream, the /api/v1/all body. The caller must not
// change it.
func (c *Content) Bytes() []byte { return c.data }

// ModTime is when the content was loaded, its Last-Modified.
func (c *Content) ModTime() time.Time { return c.modTime }

// Len is the number of metas.
func (c *Content) Len() int { return len(c.metas) }

// Query returns the lines of the metas whose schema, package and name
// equal the arguments that are not empty, in stream order, as catalogd's
// metas endpoint selects them: every argument empty selects every meta that
// has a schema (the endpoint answers that case with the whole stream
// instead, see Bytes).
func (c *Content) Query(schema, pkg, name string) [][]byte {
	sel := c.withSchema
	if schema != "" {
		sel = c.bySchema[schema]
	}
	if pkg != "" {
		sel = intersect(sel, c.byPackage[pkg])
	}
	if name != "" {
		sel = intersect(sel, c.byName[name])
	}
	out := make([][]byte, len(sel))
	for i, m := range sel {
		l := c.metas[m]
		out[i] = c.data[l.offset : l.offset+l.length : l.offset+l.length]
	}
	return out
}

// intersect returns the values in both ascending lists, ascending.
func intersect(a, b []int32) []int32 {
	var out []int32
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}
