package gunzip

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/chartpilot/chartpilot/internal/gunzip/gunziptest"
)

func TestBytes(t *testing.T) {
	const source = "Secret ns/name"
	tests := []struct {
		name string
		// data is the gzip data read.
		data func(t *testing.T) []byte
		// limit is Options.Limit.
		limit int64
		// want is the content expected, when no error is.
		want []byte
		// tooLarge expects a *TooLargeError, otherErr any other error.
		tooLarge, otherErr bool
	}{
		{name: "small", data: gz([]byte("hello")), limit: 100, want: []byte("hello")},
		{name: "empty", data: gz(nil), limit: 1, want: []byte{}},
		{name: "exactly the limit", data: gz([]byte("12345")), limit: 5, want: []byte("12345")},
		{name: "one byte past the limit", data: gz([]byte("123456")), limit: 5, tooLarge: true},
		{name: "two members read as one", data: func(t *testing.T) []byte {
			return append(gz([]byte("ab"))(t), gz([]byte("cd"))(t)...)
		}, limit: 4, want: []byte("abcd")},
		{name: "members past the limit together", data: func(t *testing.T) []byte {
			return append(gz([]byte("abc"))(t), gz([]byte("def"))(t)...)
		}, limit: 4, tooLarge: true},
		{name: "bomb: 1 MiB expanding to 1 GiB", data: func(t *testing.T) []byte { return gunziptest.Bomb(t, 1024) }, limit: 1 << 20, tooLarge: true},
		{name: "not gzip", data: func(*testing.T) []byte { return []byte("plain") }, limit: 100, otherErr: true},
		{name: "truncated", data: func(t *testing.T) []byte {
			d := gz(bytes.Repeat([]byte("x"), 100))(t)
			return d[:len(d)-4]
		}, limit: 1000, otherErr: true},
		{name: "limit not positive", data: gz([]byte("a")), limit: 0, otherErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Bytes(tt.data(t), Options{Limit: tt.limit, Source: source})
			var tooLarge *TooLargeError
			switch {
			case tt.tooLarge:
				if !errors.As(err, &tooLarge) {
					t.Fatalf("got %d bytes, error %v; want a *TooLargeError", len(got), err)
				}
				if tooLarge.Source != source || tooLarge.Limit != tt.limit {
					t.Errorf("error names %q and %d, want %q and %d", tooLarge.Source, tooLarge.Limit, source, tt.limit)
				}
			case tt.otherErr:
				if err == nil || errors.As(err, &tooLarge) {
					t.Fatalf("got error %v, want one that is not a *TooLargeError", err)
				}
			case err != nil:
				t.Fatal(err)
			case !bytes.Equal(got, tt.want):
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A bomb is refused before its expansion is held: the allocations of the
// read stay near the limit, not the 1 GiB it expands to.
func TestBytesBoundsMemory(t *testing.T) {
	const limit = 1 << 20
	bomb := gunziptest.Bomb(t, 1024)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Bytes(bomb, Options{Limit: limit, Source: "bomb"})
	runtime.ReadMemStats(&after)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("got error %v, want a *TooLargeError", err)
	}
	// io.ReadAll's doubling buffer allocates about twice the limit in all.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 1 MiB bomb that expands to 1 GiB, refused at a limit of 1 MiB, allocated %.1f MiB", float64(alloc)/(1<<20))
	if alloc > 8*limit {
		t.Errorf("reading the bomb allocated %d MiB, want at most %d", alloc>>20, 8*limit>>20)
	}
}

func gz(data []byte) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return gunziptest.Gzip(t, data) }
}
