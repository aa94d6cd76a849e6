package release

import (
	"context"
	"fmt"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
)

// unlock marks a revision left pending by an interrupted operator as failed,
// so that Helm accepts the next action on the release. Nothing in the cluster
// changes: the following upgrade or install brings the objects in line.
type unlock struct{ c *Client }

func (a unlock) Name() string { return ActionUnlock }

func (a unlock) Run(_ context.Context, req *Request, st State) error {
	rel := st.Latest
	if rel == nil || rel.Info == nil || !rel.Info.Status.IsPending() && rel.Info.Status != releasecommon.StatusUninstalling {
		return nil
	}
	// What Observe read may be the slim copy the record index keeps (no
	// chart templates, no values): written back, it would lose them, and a
	// later rollback to this revision would render nothing. Write the whole.
	store := a.c.actionConfig(req.Namespace).Releases
	rel, err := a.c.record(req.Namespace, rel.Name, rel.Version)
	if err != nil {
		return fmt.Errorf("reading revision %d of %s/%s to unlock it: %w", st.Latest.Version, req.Namespace, req.Name, err)
	}
	was := rel.Info.Status
	rel.Info.Status = releasecommon.StatusFailed
	rel.Info.Description = fmt.Sprintf("unlocked by chartpilot: revision was left %s by an interrupted operator", was)
	if err := store.Update(rel); err != nil {
		return fmt.Errorf("unlocking revision %d of %s/%s: %w", rel.Version, req.Namespace, req.Name, err)
	}
	return nil
}
