package release

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// uninstallAction removes the release and its records. With remediation set
// it clears a failed install so that it can be retried from scratch.
type uninstallAction struct {
	c           *Client
	remediation bool
}

func (a uninstallAction) Name() string { return ActionUninstall }

func (a uninstallAction) Run(_ context.Context, req *Request, _ State) error {
	_, err := newUninstall(a.c.actionConfig(req.Namespace), req).Run(req.Name)
	a.c.forget(types.NamespacedName{Namespace: req.Namespace, Name: req.Name})
	switch {
	case err == nil, errors.Is(err, driver.ErrReleaseNotFound):
		return nil
	case a.remediation:
		return fmt.Errorf("%w: uninstalling the failed release: %w", ErrRemediationFailed, err)
	default:
		return fmt.Errorf("%w: %w", ErrUninstallFailed, err)
	}
}

// Uninstall removes the release: its objects and its records. A release that
// does not exist is not an error.
func (c *Client) Uninstall(ctx context.Context, req *Request) error {
	return uninstallAction{c: c}.Run(ctx, req, State{})
}
