package ociimage

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
)

// A push to a registry that is down fails with one line naming the
// reference and the cause, and returns: nothing is left waiting.
func TestPushToARegistryThatIsDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a port nothing listens on
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := addr + "/chartpilot/down:v1"
	_, err = Push(context.Background(), img, ref)
	if err == nil {
		t.Fatal("the push to a registry that is down succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "pushing "+ref) || !strings.Contains(msg, "connection refused") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming %s and the refused connection", msg, ref)
	}
}
