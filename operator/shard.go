package operator

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// ShardLabel on a custom resource names the shard whose operator reconciles
// it (Options.Shard). The operator started without a shard leaves labelled
// CRs alone, as Flux's controllers do with their own sharding key.
const ShardLabel = "sharding.chartpilot.dev/key"

// shardWatches returns ws with each watch's selector narrowed to the CRs of
// shard: those labelled with it, or for no shard those not labelled at all.
func shardWatches(ws []watches.Watch, shard string) ([]watches.Watch, error) {
	req, err := shardRequirement(shard)
	if err != nil {
		return nil, err
	}
	out := make([]watches.Watch, len(ws))
	for i, w := range ws {
		sel := w.LabelSelector
		if sel == nil {
			sel = labels.Everything()
		}
		w.LabelSelector = sel.Add(*req)
		out[i] = w
	}
	return out, nil
}

// shardLabels are the labels a shard's operator puts on the objects of its
// releases, besides the managed label: its shard's. With them its caches
// select only its own shard's objects; a CR relabelled for another shard
// is upgraded once by that shard's operator to carry them (the labels are
// part of the release's digest). None for the operator of no shard.
func shardLabels(shard string) map[string]string {
	if shard == "" {
		return nil
	}
	return map[string]string{ShardLabel: shard}
}

// managedLabels are the labels of the release records a shard's operator
// writes, and selects in its record index.
func managedLabels(shard string) map[string]string {
	out := map[string]string{reconciler.ManagedLabel: "true"}
	maps.Copy(out, shardLabels(shard))
	return out
}

// managedSelector selects what the operator of shard caches besides the
// CRs: the objects and release records of its shard's releases.
func managedSelector(shard string) (labels.Selector, error) {
	req, err := shardRequirement(shard)
	if err != nil {
		return nil, err
	}
	managed, err := labels.NewRequirement(reconciler.ManagedLabel, selection.Equals, []string{"true"})
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*managed, *req), nil
}

func shardRequirement(shard string) (*labels.Requirement, error) {
	if shard == "" {
		return labels.NewRequirement(ShardLabel, selection.DoesNotExist, nil)
	}
	if errs := validation.IsValidLabelValue(shard); len(errs) > 0 {
		return nil, fmt.Errorf("shard %q: not a label value: %s", shard, errs[0])
	}
	return labels.NewRequirement(ShardLabel, selection.Equals, []string{shard})
}
