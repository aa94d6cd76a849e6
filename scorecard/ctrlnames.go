package scorecard

import (
	"strings"
	"sync"
	_ "unsafe" // go:linkname

	"k8s.io/apimachinery/pkg/util/sets"
	_ "sigs.k8s.io/controller-runtime/pkg/controller" // owner of the linked names

	"github.com/chartpilot/chartpilot/operator/watches"
)

// controller-runtime refuses a second controller of the same name in one
// process (the names label metrics), and operator.New names its controllers
// after their kinds without a way to opt out from outside package operator.
// The cluster tests run an operator for the same kinds several times, one
// after the other (the upgrade test even two different ones), so when an
// operator has stopped its names are given back. Remove this once
// operator.Options can skip the name check.

//go:linkname controllerNamesLock sigs.k8s.io/controller-runtime/pkg/controller.nameLock
var controllerNamesLock sync.Mutex

//go:linkname controllerNames sigs.k8s.io/controller-runtime/pkg/controller.usedNames
var controllerNames sets.Set[string]

// releaseControllerNames forgets the names of the controllers operator.New
// made for ws, after their manager stopped.
func releaseControllerNames(ws []watches.Watch) {
	controllerNamesLock.Lock()
	defer controllerNamesLock.Unlock()
	for _, w := range ws {
		gvk := w.GroupVersionKind()
		// operator.New's naming: kind.group.version, the kind lower-cased.
		controllerNames.Delete(strings.ToLower(gvk.Kind) + "." + gvk.Group + "." + gvk.Version)
	}
}
