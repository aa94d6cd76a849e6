package cluster

// SetBeforeStart makes Up call f as it is about to start a component.
func SetBeforeStart(c *Cluster, f func(component string)) { c.beforeStart = f }
