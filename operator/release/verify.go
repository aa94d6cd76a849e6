package release

import (
	"context"
)

// verify records a revision that was healthy at its health deadline as
// healthy (HealthLabel): it becomes what a later unhealthy upgrade rolls
// back to. Nothing in the cluster changes.
type verify struct{ c *Client }

func (a verify) Name() string { return ActionVerify }

func (a verify) Run(_ context.Context, req *Request, st State) error {
	return a.c.relabel(req, st.Deployed.Version, map[string]string{HealthLabel: HealthHealthy}, "")
}
