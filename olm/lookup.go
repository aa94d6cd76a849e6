package olm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/oci"
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

// LookupTimeout bounds LookupSubscribed: a catalog that does not answer
// in that time is taken as unknown, not waited for.
const LookupTimeout = 30 * time.Second

// LookupSubscribed finds the bundle a Subscription of opts installs first,
// in the catalog its CatalogSource serves: the registry server at
// CatalogAddress, else the catalog image CatalogImage, pulled into a
// temporary directory. It gives up after LookupTimeout.
func LookupSubscribed(ctx context.Context, opts SubscribeOptions) (*BundleInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, LookupTimeout)
	defer cancel()
	switch {
	case opts.CatalogAddress != "":
		return LookupBundle(ctx, opts.CatalogAddress, opts.Package, opts.Channel, opts.StartingCSV)
	case opts.CatalogImage != "":
		return LookupBundleInImage(ctx, opts.CatalogImage, opts.Package, opts.Channel, opts.StartingCSV)
	}
	return nil, errors.New("no catalog: set a catalog address or a catalog image")
}

// LookupBundleInImage is LookupBundleInConfig on the catalog of a catalog
// image, pulled (with the docker credentials) into a temporary directory.
func LookupBundleInImage(ctx context.Context, image, pkg, channel, startingCSV string) (*BundleInfo, error) {
	dir, err := os.MkdirTemp("", "chartpilot-catalog-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	configs := filepath.Join(dir, "configs")
	if _, err := oci.PullImage(ctx, image, configs); err != nil {
		return nil, err // it names the image
	}
	cfg, err := fbc.LoadDir(ctx, configs)
	if err != nil {
		return nil, fmt.Errorf("catalog image %s: %w", image, err)
	}
	return LookupBundleInConfig(cfg, pkg, channel, startingCSV)
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
	props := make([]property.Property, 0, len(b.GetProperties()))
	for _, p := range b.GetProperties() {
		props = append(props, property.Property{Type: p.GetType(), Value: json.RawMessage(p.GetValue())})
	}
	modes, err := BundleInstallModes(b.GetCsvJson(), props)
	if err != nil {
		return nil, fmt.Errorf("catalog at %s: bundle %s: %w", address, b.GetCsvName(), err)
	}
	return &BundleInfo{CSV: b.GetCsvName(), Channel: channel, InstallModes: modes}, nil
}

// LookupBundleInConfig is LookupBundle on a loaded catalog (for example a
// catalog image's, see oci.PullImage and fbc.LoadDir).
func LookupBundleInConfig(cfg *declcfg.DeclarativeConfig, pkg, channel, startingCSV string) (*BundleInfo, error) {
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return nil, fmt.Errorf("reading the catalog: %w", err)
	}
	p, ok := m[pkg]
	if !ok {
		return nil, fmt.Errorf("package %s is not in the catalog", pkg)
	}
	ch := p.DefaultChannel
	if channel != "" {
		if ch, ok = p.Channels[channel]; !ok {
			return nil, fmt.Errorf("package %s has no channel %s", pkg, channel)
		}
	}
	if ch == nil {
		return nil, fmt.Errorf("package %s has no default channel", pkg)
	}
	var b *model.Bundle
	if startingCSV != "" {
		if b, ok = ch.Bundles[startingCSV]; !ok {
			return nil, fmt.Errorf("channel %s of package %s has no bundle %s", ch.Name, pkg, startingCSV)
		}
	} else if b, err = ch.Head(); err != nil {
		return nil, fmt.Errorf("channel %s of package %s: %w", ch.Name, pkg, err)
	}
	modes, err := BundleInstallModes(b.CsvJSON, b.Properties)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	return &BundleInfo{CSV: b.Name, Channel: ch.Name, InstallModes: modes}, nil
}

// BundleInstallModes reads the install modes from the bundle's CSV: its
// JSON, else an olm.bundle.object property holding it (inline bundles), else
// the olm.csv.metadata property (image bundles).
func BundleInstallModes(csvJSON string, props []property.Property) (v1alpha1.InstallModeSet, error) {
	var modes []v1alpha1.InstallMode
	csvs := []string{csvJSON}
	for _, p := range props {
		if p.Type != property.TypeBundleObject {
			continue
		}
		var obj property.BundleObject
		if err := json.Unmarshal(p.Value, &obj); err == nil {
			csvs = append(csvs, string(obj.Data))
		}
	}
	for _, data := range csvs {
		var csv v1alpha1.ClusterServiceVersion
		if data == "" || json.Unmarshal([]byte(data), &csv) != nil || csv.Kind != v1alpha1.ClusterServiceVersionKind {
			continue
		}
		modes = csv.Spec.InstallModes
		break
	}
	if modes == nil {
		for _, p := range props {
			if p.Type != property.TypeCSVMetadata {
				continue
			}
			var md property.CSVMetadata
			if err := json.Unmarshal(p.Value, &md); err != nil {
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
