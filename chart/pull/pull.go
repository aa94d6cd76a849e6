package pull

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// Options name a chart in a Helm (HTTP) chart repository or an OCI
// registry.
type Options struct {
	// RepoURL is the repository's URL (the directory holding index.yaml).
	// Required unless Name is an oci:// reference.
	RepoURL string
	// Name is the chart's name in RepoURL, or an oci:// reference
	// (oci://HOST/PATH/NAME, optionally with :TAG). Required.
	Name string
	// Version is a version or a semver constraint (default: the latest; for
	// an oci:// reference with a tag, the tag).
	Version string
	// PlainHTTP reaches an OCI registry over HTTP instead of HTTPS, as
	// `helm pull --plain-http`. Registries served on loopback without TLS
	// (tests, a local registry) need it.
	PlainHTTP bool
	// Dest is the directory the packaged chart is written to. Required.
	Dest string
}

// Chart downloads a chart from a chart repository, the way `helm pull --repo`
// does, or from an OCI registry, the way `helm pull oci://...` does, and
// returns the path of the .tgz written into opts.Dest. Credentials are
// Helm's: `helm registry login` for OCI registries.
func Chart(opts Options) (string, error) {
	if chart.IsOCI(opts.Name) {
		if opts.Dest == "" {
			return "", errors.New("pulling a chart: a destination is required")
		}
		return pullOCI(opts)
	}
	if opts.RepoURL == "" || opts.Name == "" || opts.Dest == "" {
		return "", errors.New("pulling a chart: the repository URL, the chart name and a destination are required")
	}
	where := fmt.Sprintf("chart %s %s from %s", opts.Name, opts.Version, opts.RepoURL)
	settings := cli.New()
	getters := getter.All(settings)
	url, err := repo.FindChartInRepoURL(opts.RepoURL, opts.Name, getters, repo.WithChartVersion(opts.Version))
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	scratch, err := os.MkdirTemp("", "chartpilot-pull-")
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	defer os.RemoveAll(scratch)
	dl := downloader.ChartDownloader{
		Out:     io.Discard,
		Verify:  downloader.VerifyNever,
		Getters: getters,
		// No repositories are configured: the URL is absolute.
		RepositoryConfig: filepath.Join(scratch, "repositories.yaml"),
		RepositoryCache:  scratch,
		// Helm 4 keeps downloads in a content-addressed cache: a scratch
		// one, so that nothing outside the destination is written.
		ContentCache: filepath.Join(scratch, "content"),
	}
	path, _, err := dl.DownloadTo(url, opts.Version, opts.Dest)
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	return path, nil
}

// pullOCI pulls a chart with Helm's registry client.
func pullOCI(opts Options) (string, error) {
	repository, tag := chart.SplitOCIReference(opts.Name)
	where := "chart " + opts.Name
	if opts.Version != "" {
		where += " " + opts.Version
	}
	if tag != "" && opts.Version != "" && tag != opts.Version {
		return "", fmt.Errorf("pulling %s: the reference's tag %s and the version %s differ", where, tag, opts.Version)
	}
	clientOpts := []registry.ClientOption{
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(cli.New().RegistryConfig),
	}
	if opts.PlainHTTP {
		clientOpts = append(clientOpts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(clientOpts...)
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	if tag == "" {
		if tag, err = pickTag(client, repository, opts.Version); err != nil {
			return "", fmt.Errorf("pulling %s: %w", where, err)
		}
	}
	// OCI tags cannot hold "+": Helm pushes build metadata as "_".
	res, err := client.Pull(repository+":"+strings.ReplaceAll(tag, "+", "_"), registry.PullOptWithChart(true))
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	if res.Chart == nil || res.Chart.Meta == nil {
		return "", fmt.Errorf("pulling %s: the artifact holds no chart", where)
	}
	path := filepath.Join(opts.Dest, fmt.Sprintf("%s-%s.tgz", res.Chart.Meta.Name, res.Chart.Meta.Version))
	if err := atomicfile.WriteFile(path, res.Chart.Data, 0o644); err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	return path, nil
}

// pickTag is version itself when it is a version, else the highest tag
// satisfying the constraint (any release when empty).
func pickTag(client *registry.Client, repository, version string) (string, error) {
	if _, err := semver.StrictNewVersion(version); err == nil {
		return version, nil
	}
	constraint := version
	if constraint == "" {
		constraint = "*"
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("version %q: %w", version, err)
	}
	tags, err := client.Tags(repository)
	if err != nil {
		return "", fmt.Errorf("listing the tags of %s: %w", repository, err)
	}
	for _, t := range tags { // newest first
		if v, err := semver.NewVersion(t); err == nil && c.Check(v) {
			return t, nil
		}
	}
	return "", fmt.Errorf("no version satisfies %q among the tags %v", constraint, tags)
}
