package olm

import "context"

// SetAfterCSVsGone makes Unsubscribe run f once the CSVs are gone, before it
// checks what OLM made for them.
func SetAfterCSVsGone(o *UnsubscribeOptions, f func(context.Context) error) { o.afterCSVsGone = f }

// CSVOwnerLabels are the labels OLM puts on what it makes for the CSV name
// of namespace ns.
func CSVOwnerLabels(name, ns string) map[string]string { return csvOwnerSelector(name, ns) }
