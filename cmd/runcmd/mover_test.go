package runcmd

import (
	"strings"
	"testing"
)

func TestMoverOptionsValidate(t *testing.T) {
	tests := []struct {
		use  string
		opts MoverOptions
		// err is a part of the error; "" for none.
		err string
	}{
		{use: "backup", opts: MoverOptions{From: "/source", To: "/archive/x.tar.gz"}},
		{use: "backup", opts: MoverOptions{From: "/source"}, err: "--from and --to"},
		{use: "delete", opts: MoverOptions{To: "/source/x"}},
		{use: "serve", opts: MoverOptions{From: "/source/x.tar.gz", Listen: "10.0.0.1:8080"}},
		{use: "serve", opts: MoverOptions{From: "/source/x.tar.gz"}, err: "--listen"},
		{use: "serve", opts: MoverOptions{Listen: "10.0.0.1:8080"}, err: "--from"},
	}
	for _, tt := range tests {
		err := tt.opts.validate(tt.use)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s %+v: %v, want %q", tt.use, tt.opts, err, tt.err)
		}
	}
}
