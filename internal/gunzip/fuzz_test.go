package gunzip

import (
	"bytes"
	"errors"
	"testing"

	"github.com/chartpilot/chartpilot/internal/gunzip/gunziptest"
)

// FuzzBytes reads arbitrary bytes as gzip data, and the gzip encoding of
// arbitrary bytes: never more than the limit comes out, content within the
// limit comes back whole, and content past it is a *TooLargeError.
func FuzzBytes(f *testing.F) {
	const limit = 64
	f.Add([]byte("hello"))
	f.Add(bytes.Repeat([]byte("a"), limit+1))
	f.Add(gunziptest.Gzip(f, []byte("hello")))
	f.Add(gunziptest.Gzip(f, make([]byte, 10*limit)))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{Limit: limit, Source: "fuzz"}
		if out, err := Bytes(data, opts); err == nil && len(out) > limit {
			t.Fatalf("read %d bytes past the limit of %d", len(out), limit)
		}
		out, err := Bytes(gunziptest.Gzip(t, data), opts)
		var tooLarge *TooLargeError
		switch {
		case len(data) > limit:
			if !errors.As(err, &tooLarge) {
				t.Fatalf("%d bytes read with a limit of %d: got error %v, want a *TooLargeError", len(data), limit, err)
			}
		case err != nil:
			t.Fatalf("%d bytes read with a limit of %d: %v", len(data), limit, err)
		case !bytes.Equal(out, data):
			t.Fatalf("read back %q, want %q", out, data)
		}
	})
}
