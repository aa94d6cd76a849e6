package release

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Sentinel errors of the actions, wrapped with what went wrong.
var (
	// ErrInstallFailed: Helm could not install the release. The failed
	// release has been uninstalled again.
	ErrInstallFailed = errors.New("install failed")
	// ErrUpgradeFailed: Helm could not upgrade the release. It has been
	// rolled back to the last deployed revision when there was one.
	ErrUpgradeFailed = errors.New("upgrade failed")
	// ErrRepairFailed: objects that drifted could not be restored.
	ErrRepairFailed = errors.New("drift repair failed")
	// ErrUninstallFailed: Helm could not uninstall the release.
	ErrUninstallFailed = errors.New("uninstall failed")
	// ErrRemediationFailed: after a failed action, the rollback or uninstall
	// meant to restore a known state failed too.
	ErrRemediationFailed = errors.New("remediation failed")
	// ErrNothingChanged: the install or upgrade failed before it wrote
	// anything (a template error, a server dry run refused), so nothing
	// needs remediation.
	ErrNothingChanged = errors.New("failed before changing anything")
	// ErrNotConverged: the actions ran but the release is still not in sync.
	ErrNotConverged = errors.New("release did not converge")
	// ErrUnhealthy: a new revision regressed or was not healthy by its
	// health deadline. It is the Cause of the rollback that answers it.
	ErrUnhealthy = errors.New("unhealthy upgrade")
)

// Action changes one thing about a release.
type Action interface {
	// Name is the action's name in events, metrics and messages.
	Name() string
	// Run performs the action for the request, given what Observe saw.
	Run(ctx context.Context, req *Request, st State) error
}

// Action names.
const (
	ActionInstall   = "install"
	ActionUpgrade   = "upgrade"
	ActionRepair    = "repair"
	ActionUnlock    = "unlock"
	ActionRollback  = "rollback"
	ActionUninstall = "uninstall"
	// ActionVerify records a revision healthy at its health deadline.
	ActionVerify = "verify"
)

// failed wraps the error of an install or upgrade in its sentinel, and in
// ErrNothingChanged too when the release has no revision newer than before
// the action: Helm failed before writing anything (rendering, building the
// objects), so there is nothing to roll back or uninstall.
func (c *Client) failed(sentinel error, req *Request, before State, err error) error {
	err = c.explainNotServed(err)
	latest := 0
	if before.Latest != nil {
		latest = before.Latest.Version
	}
	history, herr := c.driver(req.Namespace).query(labels.Set{"owner": "helm", "name": req.Name})
	i := slices.IndexFunc(history, func(r *helmrelease.Release) bool { return r.Version > latest })
	if herr == nil && i < 0 {
		return fmt.Errorf("%w: %w: %w", sentinel, ErrNothingChanged, err)
	}
	if i >= 0 {
		manifest := history[i].Manifest
		if manifest == "" { // a release stored in parts: its summary
			if whole, rerr := c.record(req.Namespace, req.Name, history[i].Version); rerr == nil {
				manifest = whole.Manifest
			}
		}
		err = c.explainRulesNotHeld(context.Background(), req.Namespace, manifest, err)
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
