package fbc

import (
	"os"
	"testing"
)

func TestZZExp(t *testing.T) {
	for _, f := range []string{"/tmp/exp/a.yaml", "/tmp/exp/a.json"} {
		data, _ := os.ReadFile(f)
		_, err := LoadBytes(data)
		t.Logf("%s: len(err)=%d\n%.3000v", f, len(err.Error()), err)
	}
}
