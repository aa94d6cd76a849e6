package realnode

import (
	"testing"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// node is the real-node cluster the package's tests share: OLM v0 and
// OLM v1 side by side in pods, each test in namespaces of its own.
var node = &clustertest.SharedRealNode{Options: cluster.Options{OLM: cluster.OLMBoth}}

func TestMain(m *testing.M) {
	node.Main(m)
}
