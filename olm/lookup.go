package olm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BundleInfo is what the catalog says about the bundle a Subscription would
// install first.
type BundleInfo struct {
	// CSV is the bundle's ClusterServiceVersion name.
	CSV string `json:"csv"`
	// Channel is the channel it was looked up in (the default channel when
	// none was asked for).
	Channel string `json:"channel"`
	// InstallModes are the install modes the CSV supports.
	InstallModes v1alpha1.InstallModeSet `json:"installModes"`
}

// LookupBundle asks the registry server at address (OLM's registry gRPC API)
// for the bundle of pkg that a Subscription to channel (default: the
// package's default channel) and startingCSV (default: the channel head)
// installs, and returns its install modes.
func LookupBundle(ctx context.Context, address, pkg, channel, startingCSV string) (*BundleInfo, error) {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("catalog at %s: %w", address, err)
	}
	defer conn.Close()
	reg := api.NewRegistryClient(conn)
	if channel == "" {
		p, err := reg.GetPackage(ctx, &api.GetPackageRequest{Name: pkg})
		if err != nil {
			return nil, fmt.Errorf("catalog at %s: package %s: %w", address, pkg, err)
		}
		channel = p.GetDefaultChannelName()
	}
	var b *api.Bundle
	if startingCSV != "" {
		b, err = reg.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: channel, CsvName: startingCSV})
	} else {
		b, err = reg.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: channel})
	}
	if err != nil {
		return nil, fmt.Errorf("catalog at %s: package %s channel %s: %w", address, pkg, channel, err)
	}
	modes, err := bundleInstallModes(b)
	if err != nil {
		return nil, fmt.Errorf("catalog at %s: bundle %s: %w", address, b.GetCsvName(), err)
	}
	return &BundleInfo{CSV: b.GetCsvName(), Channel: channel, InstallModes: modes}, nil
}

// bundleInstallModes reads the install modes from the bundle's CSV (inline
// bundles) or its olm.csv.metadata property (image bundles).
func bundleInstallModes(b *api.Bundle) (v1alpha1.InstallModeSet, error) {
	var modes []v1alpha1.InstallMode
	if b.GetCsvJson() != "" {
		var csv v1alpha1.ClusterServiceVersion
		if err := json.Unmarshal([]byte(b.GetCsvJson()), &csv); err != nil {
			return nil, fmt.Errorf("parsing the CSV: %w", err)
		}
		modes = csv.Spec.InstallModes
	} else {
		for _, p := range b.GetProperties() {
			if p.GetType() != property.TypeCSVMetadata {
				continue
			}
			var md property.CSVMetadata
			if err := json.Unmarshal([]byte(p.GetValue()), &md); err != nil {
				return nil, fmt.Errorf("parsing %s: %w", property.TypeCSVMetadata, err)
			}
			modes = md.InstallModes
		}
	}
	if len(modes) == 0 {
		return nil, errors.New("no install modes in its CSV")
	}
	set := v1alpha1.InstallModeSet{}
	for _, m := range modes {
		set[m.Type] = m.Supported
	}
	return set, nil
}
