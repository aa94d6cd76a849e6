package release

import (
	"fmt"

	"github.com/chartpilot/chartpilot/operator/watches"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
)

// What a request turns into for each of Helm's actions, in one place and
// pure (no cluster is reached before Run), so that options_test.go tells
// what every field of a request sets.

// MaxHistory is how many revisions of a release Helm keeps: each is a Secret.
const MaxHistory = 10

// postRenderStrategy keeps hooks out of the post-renderer, as in Helm 3:
// Helm 4 sends them along by default, and the runtime's post-renderers
// (owner references, labels, autoscalers) are for the release's objects.
const postRenderStrategy = action.PostRenderStrategyNoHooks

// applyMethod is how upgrades and rollbacks apply: the way the release's
// latest revision was applied (Helm's "auto"), so a release never changes
// field managers behind its owner's back.
const applyMethod = "auto"

// dryRunStrategy is Helm's dry run for the try of an install or upgrade
// (serverTry), or none for the real one.
func dryRunStrategy(serverTry bool) action.DryRunStrategy {
	if serverTry {
		return action.DryRunServer
	}
	return action.DryRunNone
}

// newInstall is the install of req; serverTry makes it the server dry run.
// Only hooks are waited for, as Helm 3 did without --wait: the reconciler
// follows readiness through its own watches. The API server validates
// every object it receives; Helm's own OpenAPI validation re-parses the
// schema documents on every action and cost three quarters of the
// operator's CPU.
func newInstall(cfg *action.Configuration, req *Request, serverTry bool) *action.Install {
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = req.Name, req.Namespace
	in.DisableHooks = req.InstallDisableHooks
	in.Timeout = req.timeout()
	in.ServerSideApply = req.ServerSideApply
	in.WaitStrategy = kube.HookOnlyStrategy
	in.PostRenderer, in.PostRenderStrategy = req.PostRenderer, postRenderStrategy
	in.DisableOpenAPIValidation = true
	in.Labels = revisionLabels(req, false)
	in.Description = "installed by chartpilot"
	in.DryRunStrategy = dryRunStrategy(serverTry)
	return in
}

// newUpgrade is the upgrade of req (see newInstall).
func newUpgrade(cfg *action.Configuration, req *Request, serverTry bool) *action.Upgrade {
	up := action.NewUpgrade(cfg)
	up.Namespace = req.Namespace
	up.ForceReplace = req.UpgradeForce
	up.ServerSideApply = applyMethod
	up.WaitStrategy = kube.HookOnlyStrategy
	up.DisableHooks = req.UpgradeDisableHooks
	up.Timeout = req.timeout()
	up.PostRenderer, up.PostRenderStrategy = req.PostRenderer, postRenderStrategy
	up.DisableOpenAPIValidation = true
	up.MaxHistory = MaxHistory
	up.Labels = revisionLabels(req, true)
	up.Description = "upgraded by chartpilot"
	up.DryRunStrategy = dryRunStrategy(serverTry)
	return up
}

// newUninstall is the uninstall of req. With UninstallWait, Helm 4's
// watcher follows each object with kstatus until it is gone.
func newUninstall(cfg *action.Configuration, req *Request) *action.Uninstall {
	un := action.NewUninstall(cfg)
	un.DisableHooks = req.UninstallDisableHooks
	un.WaitStrategy = kube.HookOnlyStrategy
	if req.UninstallWait {
		un.WaitStrategy = kube.StatusWatcherStrategy
	}
	un.Timeout = req.timeout()
	un.Description = "uninstalled by chartpilot"
	return un
}

// newRollback is the rollback of req's release to revision version, forced
// (objects replaced) or not.
func newRollback(cfg *action.Configuration, req *Request, version int, force bool) *action.Rollback {
	rb := action.NewRollback(cfg)
	rb.Version = version
	rb.ForceReplace = force
	rb.ServerSideApply = applyMethod
	rb.WaitStrategy = kube.HookOnlyStrategy
	rb.DisableHooks = req.UpgradeDisableHooks
	rb.Timeout = req.timeout()
	rb.MaxHistory = MaxHistory
	return rb
}

// tryThenRun runs an install or upgrade: first as a server dry run when
// the request asks for one (a client one is what Helm does anyway: it
// renders and builds every object before it writes anything), then for
// real. run(true) is the try. Errors wrap sentinel.
func (c *Client) tryThenRun(req *Request, st State, sentinel error, run func(serverTry bool) error) error {
	if req.DryRun == watches.DryRunServer {
		if err := run(true); err != nil {
			return fmt.Errorf("%w: %w (server dry run): %w", sentinel, ErrNothingChanged, c.explainNotServed(err))
		}
	}
	if err := run(false); err != nil {
		return c.failed(sentinel, req, st, err)
	}
	return nil
}
