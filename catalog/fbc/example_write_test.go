package fbc_test

import (
	"os"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

func ExampleWriteYAML() {
	cfg := declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "hello", DefaultChannel: "stable"}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "hello", Name: "stable", Entries: []declcfg.ChannelEntry{
			{Name: "hello.v0.2.0", Replaces: "hello.v0.1.0", SkipRange: "<0.2.0"},
			{Name: "hello.v0.1.0"},
		}}},
	}
	if err := fbc.WriteYAML(cfg, os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// ---
	// defaultChannel: stable
	// name: hello
	// schema: olm.package
	// ---
	// entries:
	// - name: hello.v0.2.0
	//   replaces: hello.v0.1.0
	//   skipRange: <0.2.0
	// - name: hello.v0.1.0
	// name: stable
	// package: hello
	// schema: olm.channel
}
