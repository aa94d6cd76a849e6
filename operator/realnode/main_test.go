package realnode

import (
	"testing"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// node is the real-node cluster the package's tests share. Each test
// removes what it made: make deploy's operator, left running, would
// reconcile the next test's custom resources.
var node = &clustertest.SharedRealNode{Options: cluster.Options{WithoutOLM: true}}

func TestMain(m *testing.M) {
	node.Main(m)
}
