package index_test

import (
	"context"
	"fmt"

	"github.com/chartpilot/chartpilot/catalog/index"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
)

// An index answers the registry calls directly; register it on a
// grpc.Server with api.RegisterRegistryServer to serve them.
func Example() {
	image := func(name, version string) declcfg.Bundle {
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: "demo", Name: name,
			Image: "registry.example.com/demo-bundle:v" + version, Properties: []property.Property{property.MustBuildPackage("demo", version)}}
	}
	cfg := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "demo", DefaultChannel: "stable"}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "demo", Name: "stable", Entries: []declcfg.ChannelEntry{
			{Name: "demo.v1.0.0"}, {Name: "demo.v1.1.0", Replaces: "demo.v1.0.0"},
		}}},
		Bundles: []declcfg.Bundle{image("demo.v1.0.0", "1.0.0"), image("demo.v1.1.0", "1.1.0")},
	}
	idx, err := index.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	head, err := idx.GetBundleForChannel(context.Background(), &api.GetBundleInChannelRequest{PkgName: "demo", ChannelName: "stable"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(head.CsvName, head.BundlePath)
	_, err = idx.GetBundleForChannel(context.Background(), &api.GetBundleInChannelRequest{PkgName: "demo", ChannelName: "beta"})
	fmt.Println(err)
	// Output:
	// demo.v1.1.0 registry.example.com/demo-bundle:v1.1.0
	// rpc error: code = Unknown desc = package "demo", channel "beta" not found
}
