package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// BackupDir is where adopt keeps the files it rewrites, under the project,
// at their paths relative to it.
const BackupDir = ".chartpilot-backup"

// ErrBackupExists is returned by Adopt when a file it would rewrite has a
// backup from an earlier adopt that differs from the file now: writing a
// new backup would lose the old one, so adopt changes nothing.
var ErrBackupExists = errors.New("a different backup exists from an earlier adopt")

// AdoptOptions configure Adopt.
type AdoptOptions struct {
	// Dir is the project's directory. Required.
	Dir string
	// KubeVersion is the Kubernetes version the charts' APIs are checked
	// against (default rbac.DefaultKubeVersion).
	KubeVersion string
	// Config, when set, resolves kinds through this cluster's discovery.
	Config *rest.Config
	// DryRun computes the changes and writes nothing.
	DryRun bool
	// Out receives warnings (default io.Discard).
	Out io.Writer
}

// FileChange is one file Adopt creates or rewrites.
type FileChange struct {
	// Path is the file's path relative to the project, with slashes.
	Path string
	// Created is true for a file the project lacked.
	Created bool
	// Backup is where the old content was saved (relative to the project),
	// for a rewritten file.
	Backup string
	// Why says what the change is for.
	Why string
	// Diff is the unified diff of a rewritten file.
	Diff string
}

// AdoptResult is what Adopt changed (or, with DryRun, would change).
type AdoptResult struct {
	Changes []FileChange
	// Notes are what adopt saw but left to the author.
	Notes []string
}

// Write prints the result: one line per file, and with diffs the unified
// diff of each rewritten file.
func (r *AdoptResult) Write(w io.Writer, diffs bool) error {
	if len(r.Changes) == 0 {
		fmt.Fprintln(w, "Nothing to change: the project already works with chartpilot.")
	}
	for _, c := range r.Changes {
		switch {
		case c.Created:
			fmt.Fprintf(w, "create  %s: %s\n", c.Path, c.Why)
		default:
			fmt.Fprintf(w, "rewrite %s: %s (backup: %s)\n", c.Path, c.Why, c.Backup)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if diffs {
		for _, c := range r.Changes {
			if c.Diff != "" {
				fmt.Fprint(w, "\n"+c.Diff)
			}
		}
	}
	return nil
}

// Adopt makes a project written by `operator-sdk init --plugins helm`
// (PROJECT version 3 with the helm.sdk.operatorframework.io/v1 layout,
// watches.yaml, config/, Makefile) work with chartpilot, adding what is
// missing and keeping what the author wrote:
//   - config/rbac/role.yaml derived from the charts (least privilege)
//     replaces operator-sdk's, whose chart rules grant every verb: a
//     ClusterRole for cluster-scoped rules, a Role for namespaced ones,
//     bound in role_binding.yaml, and role_all_namespaces.yaml for the
//     deployment of config/default, which watches all namespaces; no backup
//     rules, as adopt scaffolds no backup APIs;
//   - each CRD under config/crd/bases gets the spec schema of its chart;
//   - the Makefile's targets that chartpilot also has (run, install, deploy,
//     bundle, catalog-build...) run chartpilot commands; the author's
//     variables, other targets and help texts stay; the variables and
//     targets chartpilot needs and the Makefile lacks are added;
//   - config/scorecard is added when absent.
//
// Every rewritten file is first saved under BackupDir; when a different
// backup is already there, Adopt refuses (ErrBackupExists) and changes
// nothing. Everything is computed before the first write, and a failed
// write restores the files already written. Adopt is idempotent: run on an
// adopted project it changes nothing.
func Adopt(opts AdoptOptions) (*AdoptResult, error) {
	if opts.Dir == "" {
		return nil, errors.New("adopt: no project directory")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	g, err := openProject(opts.Dir, opts.KubeVersion, opts.Config, opts.Out)
	if err != nil {
		return nil, fmt.Errorf("adopt: %w", err)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "config")); err != nil {
		return nil, fmt.Errorf("adopt: %s is not an operator-sdk Helm project: %w", opts.Dir, err)
	}
	want, why, notes, err := g.adoptedFiles()
	if err != nil {
		return nil, fmt.Errorf("adopt: %w", err)
	}
	res := &AdoptResult{Notes: notes}
	old := map[string][]byte{}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(opts.Dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			res.Changes = append(res.Changes, FileChange{Path: p, Created: true, Why: why[p]})
			continue
		case err != nil:
			return nil, fmt.Errorf("adopt: %w", err)
		case bytes.Equal(data, want[p]):
			continue
		}
		old[p] = data
		backup := BackupDir + "/" + p
		prev, err := os.ReadFile(filepath.Join(opts.Dir, filepath.FromSlash(backup)))
		if err == nil && !bytes.Equal(prev, data) {
			return nil, fmt.Errorf("adopt: %s would be rewritten, but %s holds another version of it: %w; compare them and move %s away",
				p, backup, ErrBackupExists, BackupDir)
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(data)), B: difflib.SplitLines(string(want[p])),
			FromFile: "a/" + p, ToFile: "b/" + p, Context: 3})
		if err != nil {
			return nil, fmt.Errorf("adopt: diff of %s: %w", p, err)
		}
		res.Changes = append(res.Changes, FileChange{Path: p, Backup: backup, Why: why[p], Diff: diff})
	}
	if dockerfile, err := os.ReadFile(filepath.Join(opts.Dir, "Dockerfile")); err == nil && bytes.Contains(dockerfile, []byte("helm-operator")) {
		res.Notes = append(res.Notes, "Dockerfile builds on operator-sdk's helm-operator image: it runs the project as it is; chartpilot's own Dockerfile (chartpilot init) runs `chartpilot run` instead")
	}
	if opts.DryRun {
		return res, nil
	}
	return res, writeAdopted(opts.Dir, res.Changes, want, old)
}

// adoptedFiles are the files of the adopted project that chartpilot
// writes, why, and notes on what the author should know.
func (g *generator) adoptedFiles() (files map[string][]byte, why map[string]string, notes []string, err error) {
	files, err = g.derived()
	if err != nil {
		return nil, nil, nil, err
	}
	why = map[string]string{}
	for p := range files {
		why[p] = "the spec schema derived from the chart's values"
	}
	why[RoleFile] = "least-privilege rules derived from the charts instead of every verb on each kind: cluster-scoped ones in a ClusterRole, namespaced ones in a Role"
	why[RoleBindingFile] = "binds the Role of role.yaml (the namespaced rules) too"
	why[AllNamespacesRoleFile] = "the Role's rules in every namespace, for the operator of config/default, which watches all namespaces (bundles leave it out)"
	why[rbacKustomizationFile] = "lists " + filepath.Base(AllNamespacesRoleFile)
	why[AlertsFile] = "alerts on the releases' metrics (list it in config/prometheus/kustomization.yaml to ship it)"
	why[DashboardFile] = "a Grafana dashboard of the releases (list it in config/prometheus/kustomization.yaml to ship it)"
	// The targets of operator.mk go into the author's Makefile unless it
	// includes operator.mk; a project without a Makefile gets init's two.
	ours, err := render(staticFiles[OperatorMakefile], g.data())
	if err != nil {
		return nil, nil, nil, err
	}
	why[OperatorMakefile] = "the operator's targets, which the Makefile includes"
	user, err := os.ReadFile(filepath.Join(g.dir, "Makefile"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if files["Makefile"], err = render(staticFiles["Makefile"], g.data()); err != nil {
			return nil, nil, nil, err
		}
		files[OperatorMakefile], why["Makefile"] = ours, "chartpilot's Makefile"
	case err != nil:
		return nil, nil, nil, err
	case includes(user, OperatorMakefile):
		files[OperatorMakefile] = ours
	default:
		r := rewireMakefile(user, ours)
		files["Makefile"], why["Makefile"] = r.out, r.why()
		for _, v := range r.removed {
			notes = append(notes, "Makefile: removed "+v.String())
		}
	}
	if _, err := os.Stat(filepath.Join(g.dir, "config", "scorecard")); errors.Is(err, fs.ErrNotExist) {
		for p, tmpl := range staticFiles {
			if !strings.HasPrefix(p, "config/scorecard/") {
				continue
			}
			out, err := render(tmpl, g.data())
			if err != nil {
				return nil, nil, nil, err
			}
			files[p], why[p] = out, "scorecard configuration (make scorecard)"
		}
	}
	shards, err := g.missingShardFiles()
	if err != nil {
		return nil, nil, nil, err
	}
	for p, out := range shards {
		files[p], why[p] = out, "an overlay that runs the operator as shards (`run --shard`: chartpilot's runtime), to deploy instead of config/default"
	}
	return files, why, notes, nil
}

// writeAdopted saves the backups, then writes each change atomically; on
// a failure it puts back what it had written.
func writeAdopted(dir string, changes []FileChange, want, old map[string][]byte) error {
	for _, c := range changes {
		if c.Backup == "" {
			continue
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, filepath.FromSlash(c.Backup)), old[c.Path], 0o644); err != nil {
			return fmt.Errorf("adopt: backing up %s: %w", c.Path, err)
		}
	}
	for i, c := range changes {
		path := filepath.Join(dir, filepath.FromSlash(c.Path))
		err := atomicfile.WriteFile(path, want[c.Path], 0o644)
		if err == nil {
			continue
		}
		err = fmt.Errorf("adopt: writing %s: %w", c.Path, err)
		for _, done := range changes[:i] {
			p := filepath.Join(dir, filepath.FromSlash(done.Path))
			var rerr error
			if done.Created {
				rerr = os.Remove(p)
			} else {
				rerr = atomicfile.WriteFile(p, old[done.Path], 0o644)
			}
			if rerr != nil {
				err = errors.Join(err, fmt.Errorf("restoring %s: %w", done.Path, rerr))
			}
		}
		return err
	}
	return nil
}
