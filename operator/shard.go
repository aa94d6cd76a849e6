package operator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

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

func shardRequirement(shard string) (*labels.Requirement, error) {
	if shard == "" {
		return labels.NewRequirement(ShardLabel, selection.DoesNotExist, nil)
	}
	if errs := validation.IsValidLabelValue(shard); len(errs) > 0 {
		return nil, fmt.Errorf("shard %q: not a label value: %s", shard, errs[0])
	}
	return labels.NewRequirement(ShardLabel, selection.Equals, []string{shard})
}
