package backup

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// A Backup a Restore reads is not deleted under it: its deletion waits
// (its finalizer holds, reason ReasonHeldByRestore naming the Restores)
// until they end; a Restore that has not started when its Backup is being
// deleted fails at once (ReasonBackupDeleting) rather than start a copy
// whose archive is about to go.
const (
	ReasonHeldByRestore  = "HeldByRestore"
	ReasonBackupDeleting = "BackupDeleting"
)

// restoresReading names the Restores of the namespace that read backup and
// have not ended, nor are being deleted.
func (o *Options) restoresReading(ctx context.Context, ns, backup string) ([]string, error) {
	gvk := api.RestoreKind(o.Watched)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := o.Reader.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the %ss of namespace %s: %w", gvk.Kind, ns, err)
	}
	var out []string
	for i := range list.Items {
		item := &list.Items[i]
		var spec api.RestoreSpec
		var st api.RestoreStatus
		if err := fromObject(item, &spec, &st); err != nil {
			return nil, err
		}
		if spec.BackupName == backup && !st.Phase.Done() && item.GetDeletionTimestamp() == nil {
			out = append(out, item.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// heldMessage says which Restores hold a Backup's deletion.
func heldMessage(restores []string) string {
	return fmt.Sprintf("the deletion waits for %s %s, which read(s) this backup, to end", pluralRestore(len(restores)), strings.Join(restores, ", "))
}

func pluralRestore(n int) string {
	if n == 1 {
		return "Restore"
	}
	return "Restores"
}

// notStartedFromDeleted tells whether a restore that has not started
// reads a Backup being deleted.
func notStartedFromDeleted(run *restoreRun, b *unstructured.Unstructured) bool {
	started := run.st.Phase != "" && run.st.Phase != api.PhasePending
	return !started && b.GetDeletionTimestamp() != nil
}
