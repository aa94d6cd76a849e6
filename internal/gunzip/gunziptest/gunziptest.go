package gunziptest

import (
	"bytes"
	"compress/gzip"
	"testing"
)

// Bomb returns gzip data that expands to members MiB of zeros: one member
// of 1 MiB of zeros (about 1 KiB compressed) repeated, as gzip readers
// read concatenated members as one stream. 1024 members are about 1 MiB
// that expands to 1 GiB, made in a millisecond.
func Bomb(t testing.TB, members int) []byte {
	t.Helper()
	return bytes.Repeat(Gzip(t, make([]byte, 1<<20)), members)
}

// Gzip compresses data.
func Gzip(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
