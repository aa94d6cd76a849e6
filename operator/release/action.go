package release

import (
	"context"
	"errors"
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
	// ErrDryRunFailed: the dry run before an install or upgrade failed, so
	// nothing was changed and nothing needs remediation.
	ErrDryRunFailed = errors.New("dry run failed, nothing changed")
	// ErrNotConverged: the actions ran but the release is still not in sync.
	ErrNotConverged = errors.New("release did not converge")
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
)
