package metricsauth

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Path is the path of the metrics endpoint, the non-resource URL a scraper
// must be allowed to get.
const Path = "/metrics"

// ReaderRole is the name of the ClusterRole that lets its holders scrape
// the metrics (before config/default's name prefix).
const ReaderRole = "metrics-reader"

// AuthRules are what the operator needs to authenticate and authorize the
// scrapers of its metrics endpoint when it serves it securely.
func AuthRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
}

// ReaderRules are what a scraper (Prometheus's ServiceAccount) needs.
func ReaderRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{NonResourceURLs: []string{Path}, Verbs: []string{"get"}}}
}
