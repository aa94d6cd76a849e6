package runcmd

import (
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The run command serves metrics securely, on loopback, unless told.
func TestRunMetricsFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// secure is --metrics-secure after parsing; addr what the operator
		// is given ("" takes operator.Options' default for the serving).
		secure bool
		addr   string
	}{
		{name: "defaults", secure: true},
		{name: "local opt-out", args: []string{"--metrics-secure=false"}, secure: false},
		{name: "in a pod", args: []string{"--metrics-bind-address=:8443", "--metrics-secure"}, secure: true, addr: ":8443"},
		{name: "disabled", args: []string{"--metrics-bind-address=0"}, secure: true, addr: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := New(genericiooptions.NewTestIOStreamsDiscard(), genericclioptions.NewConfigFlags(false))
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			secure, err := cmd.Flags().GetBool("metrics-secure")
			if err != nil {
				t.Fatal(err)
			}
			if secure != tt.secure {
				t.Errorf("--metrics-secure = %t, want %t", secure, tt.secure)
			}
			if got := metricsAddress(cmd.Flags()); got != tt.addr {
				t.Errorf("metrics address %q, want %q", got, tt.addr)
			}
		})
	}
}
