package bundle

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"
)

// Errors of Generate that callers may want to tell apart.
var (
	// ErrInvalidVersion means the bundle version is not semver.
	ErrInvalidVersion = errors.New("invalid bundle version")
	// ErrOrphanSample means a sample's kind is owned by no CRD in the bundle.
	ErrOrphanSample = errors.New("sample of a kind no CRD in the bundle owns")
	// ErrCapabilityNotProven means the base CSV declares a capability level
	// the evidence does not support.
	ErrCapabilityNotProven = errors.New("declared capability level not proven")
)

// GenerateOptions configure Generate. Zero values are the defaults.
type GenerateOptions struct {
	// Dir is the project directory (default ".").
	Dir string
	// OutputDir is the bundle directory, relative to Dir unless absolute
	// (default "bundle"). bundle.Dockerfile is written in Dir.
	OutputDir string
	// Version is the operator's version, semver without a leading "v". Required.
	Version string
	// Package is the package name (default: the PROJECT's projectName).
	Package string
	// Channels are the bundle's channels (default: the existing bundle's,
	// else "alpha").
	Channels []string
	// DefaultChannel is the package's default channel (default: the
	// existing bundle's, else the only channel when there is one).
	DefaultChannel string
	// Images replace container images by name, as `kustomize edit set image`
	// does: "controller" -> "quay.io/me/op:v0.1.0".
	Images map[string]string
	// KubeVersion is the Kubernetes version the charts are rendered for when
	// the owned APIs' resources are derived (default rbac.DefaultKubeVersion).
	KubeVersion string
	// Replaces names the bundle this one replaces; it wins over FromCatalog.
	Replaces string
	// FromCatalog is a file-based catalog directory: the bundle replaces
	// the newest older version of its package in its channels there, and
	// skips every version from the oldest up to its own.
	FromCatalog string
	// UseImageDigests pins every image of the CSV to its digest, resolved
	// against its registry with the docker credentials.
	UseImageDigests bool
	// ScorecardResults is a scorecard results file (v1alpha3 TestList JSON)
	// used as evidence for the capability level.
	ScorecardResults string
	// ForceCapabilities writes the base CSV's declared capability level even
	// when the evidence does not support it.
	ForceCapabilities bool
	// CreatedAt fixes the CSV's createdAt (e.g. from SOURCE_DATE_EPOCH).
	// Nil keeps the existing bundle's createdAt when nothing else changed,
	// and uses the current time otherwise.
	CreatedAt *time.Time
	// Builder is written as the metrics builder annotation (default "chartpilot").
	Builder string
	// Out receives warnings (default io.Discard).
	Out io.Writer

	// now is the clock; tests replace it.
	now func() time.Time
}

func (o *GenerateOptions) defaults() error {
	o.Dir = cmp.Or(o.Dir, ".")
	o.OutputDir = cmp.Or(o.OutputDir, DefaultOutputDir)
	if !filepath.IsAbs(o.OutputDir) {
		o.OutputDir = filepath.Join(o.Dir, o.OutputDir)
	}
	o.KubeVersion = cmp.Or(o.KubeVersion, rbac.DefaultKubeVersion)
	o.Builder = cmp.Or(o.Builder, "chartpilot")
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.Version == "" {
		return fmt.Errorf("%w: no version (--version)", ErrInvalidVersion)
	}
	if _, err := registryv1.ParseVersion(o.Version); err != nil {
		return fmt.Errorf("%w: --version: %w", ErrInvalidVersion, err)
	}
	if err := checkNames(o); err != nil {
		return err
	}
	if o.DefaultChannel != "" && len(o.Channels) > 0 && !slices.Contains(o.Channels, o.DefaultChannel) {
		return fmt.Errorf("--default-channel %q is not one of --channels %s", o.DefaultChannel, strings.Join(o.Channels, ","))
	}
	return nil
}

// checkNames checks the package and channel names given by flags with the
// catalog's rules, which a catalog add of the bundle applies too.
func checkNames(o *GenerateOptions) error {
	if o.Package != "" {
		if err := registryv1.CheckPackageName(o.Package); err != nil {
			return fmt.Errorf("--package: %w", err)
		}
	}
	for _, ch := range o.Channels {
		if err := registryv1.CheckChannelName(ch); err != nil {
			return fmt.Errorf("--channels: %w", err)
		}
	}
	if o.DefaultChannel != "" {
		if err := registryv1.CheckChannelName(o.DefaultChannel); err != nil {
			return fmt.Errorf("--default-channel: %w", err)
		}
	}
	return nil
}

// GenerateResult says what Generate did.
type GenerateResult struct {
	// Dir is the bundle directory.
	Dir string `json:"dir"`
	// CSV is the ClusterServiceVersion's name.
	CSV string `json:"csv"`
	// Package, Channels and DefaultChannel are the bundle's metadata.
	Package        string   `json:"package"`
	Channels       []string `json:"channels"`
	DefaultChannel string   `json:"defaultChannel,omitempty"`
	// Replaces and SkipRange are the upgrade path the CSV declares.
	Replaces  string `json:"replaces,omitempty"`
	SkipRange string `json:"skipRange,omitempty"`
	// Capabilities is the level written, with its assessment.
	Capabilities string      `json:"capabilities"`
	Assessment   *Assessment `json:"assessment"`
	// Files are the bundle's files, relative to Dir.
	Files []string `json:"files"`
	// Unchanged is true when the bundle on disk already was this output.
	Unchanged bool `json:"unchanged"`
	// CreatedBase is true when a new base CSV was written.
	CreatedBase bool `json:"createdBase,omitempty"`
	// Images are the images the charts' renders name (relatedImages), each
	// with where it was found.
	Images []FoundImage `json:"images,omitempty"`
	// Warnings are findings that did not stop generation.
	Warnings []string `json:"warnings,omitempty"`
}

// generation is one run of Generate.
type generation struct {
	opts    GenerateOptions
	res     *GenerateResult
	project *scaffold.Project
	// operandImages are the images the charts run.
	operandImages []FoundImage
	// elsewhere are the charts' namespaced objects in a namespace of their
	// own, which the namespaced install modes do not grant.
	elsewhere []string
}

func (g *generation) warn(format string, args ...any) {
	g.res.Warnings = append(g.res.Warnings, fmt.Sprintf(format, args...))
}
