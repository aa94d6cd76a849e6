package registryv1

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckPackageName says whether name may name a package: a lowercase RFC
// 1123 label, as OLM's package names are (they become parts of object
// names and labels). bundle generate and the catalog commands share it.
func CheckPackageName(name string) error {
	if name == "" {
		return errors.New("package name must be set")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("invalid package name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// CheckChannelName says whether name may name a channel: a lowercase RFC
// 1123 subdomain (stable, fast-v1, stable-v1.2), so that a Subscription's
// spec.channel and the comma-separated channels annotation carry it as is.
// bundle generate and the catalog commands share it.
func CheckChannelName(name string) error {
	if name == "" {
		return errors.New("channel names must not be empty")
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("invalid channel name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}
