package chart

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/repo"
)

// PullOptions name a chart in a Helm (HTTP) chart repository.
type PullOptions struct {
	// RepoURL is the repository's URL (the directory holding index.yaml). Required.
	RepoURL string
	// Name is the chart's name. Required.
	Name string
	// Version is a version or a semver constraint (default: the latest).
	Version string
	// Dest is the directory the packaged chart is written to. Required.
	Dest string
}

// Pull downloads a chart from a chart repository, the way `helm pull --repo`
// does, and returns the path of the .tgz written into opts.Dest.
func Pull(opts PullOptions) (string, error) {
	if opts.RepoURL == "" || opts.Name == "" || opts.Dest == "" {
		return "", errors.New("pulling a chart: the repository URL, the chart name and a destination are required")
	}
	where := fmt.Sprintf("chart %s %s from %s", opts.Name, opts.Version, opts.RepoURL)
	settings := cli.New()
	getters := getter.All(settings)
	url, err := repo.FindChartInRepoURL(opts.RepoURL, opts.Name, opts.Version, "", "", "", getters)
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
	}
	path, _, err := dl.DownloadTo(url, opts.Version, opts.Dest)
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", where, err)
	}
	return path, nil
}
