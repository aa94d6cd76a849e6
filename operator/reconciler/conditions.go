package reconciler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/chartpilot/chartpilot/operator/health"
	"github.com/chartpilot/chartpilot/operator/release"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Condition types, operator-sdk's four plus Ready and Drifted.
const (
	TypeInitialized    = "Initialized"
	TypeDeployed       = "Deployed"
	TypeReleaseFailed  = "ReleaseFailed"
	TypeIrreconcilable = "Irreconcilable"
	// TypeReady: every object of the release is ready (kstatus Current).
	TypeReady = "Ready"
	// TypeDrifted: objects of the release were changed in the cluster.
	TypeDrifted = "Drifted"
)

// Condition reasons, operator-sdk's names where it has one.
const (
	ReasonInstallSuccessful   = "InstallSuccessful"
	ReasonUpgradeSuccessful   = "UpgradeSuccessful"
	ReasonUninstallSuccessful = "UninstallSuccessful"
	ReasonReconcileSuccessful = "ReconcileSuccessful"
	ReasonInstallError        = "InstallError"
	ReasonUpgradeError        = "UpgradeError"
	ReasonReconcileError      = "ReconcileError"
	ReasonUninstallError      = "UninstallError"
	ReasonInvalidValues       = "InvalidValues"
	ReasonObjectsReady        = "ObjectsReady"
	ReasonObjectsNotReady     = "ObjectsNotReady"
	ReasonDriftRepaired       = "DriftRepaired"
	ReasonNoDrift             = "NoDrift"
	// ReasonRepairSuspended: objects kept drifting past the DriftLimit, so
	// the operator leaves them as they are (Drifted is True) until the
	// spec or an annotation of the CR changes. Also the event's reason.
	ReasonRepairSuspended = "DriftRepairSuspended"
	// ReasonUpgradeUnhealthy (ReleaseFailed): the requested chart and values
	// were rolled back as unhealthy; the message says why.
	ReasonUpgradeUnhealthy = "UpgradeUnhealthy"
	// ReasonAPINotServed (ReleaseFailed): the chart renders an API the
	// cluster does not serve (removed from Kubernetes, or a CRD not
	// installed); the message names it and what the cluster serves instead.
	ReasonAPINotServed = "APINotServed"
	// ReasonRulesNotHeld (ReleaseFailed): the values make the chart grant
	// rules the operator does not hold, which Kubernetes refuses; the
	// message names each and how to derive the RBAC with these values.
	ReasonRulesNotHeld = "RulesNotHeld"
)

// Event reasons of Helm actions; a failed action's reason ends in "Failed"
// (InstalledFailed, RolledBackFailed...).
const (
	EventInstalled     = "Installed"
	EventUpgraded      = "Upgraded"
	EventDriftRepaired = "DriftRepaired"
	EventUnlocked      = "Unlocked"
	EventRolledBack    = "RolledBack"
	EventUninstalled   = "Uninstalled"
	// EventHealthVerified: a new revision was healthy at its deadline.
	EventHealthVerified = "HealthVerified"
	// EventUnhealthyRolledBack (Warning): a new revision regressed or was
	// not healthy by its deadline and was rolled back to the last healthy one.
	EventUnhealthyRolledBack = "UnhealthyUpgradeRolledBack"
)

// Event reasons of the health of a release's objects.
const (
	ReasonObjectsUnhealthy = "ObjectsUnhealthy"
	ReasonObjectsHealthy   = "ObjectsHealthy"
)

// Status is what the runtime writes to a custom resource's status.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	DeployedRelease    *DeployedRelease   `json:"deployedRelease,omitempty"`
	// Health names the objects of the release that are not healthy and
	// why; nil when all are.
	Health *health.Summary `json:"health,omitempty"`
}

// DeployedRelease names the release currently deployed for the CR.
type DeployedRelease struct {
	Name       string `json:"name"`
	Version    int    `json:"version"`
	Chart      string `json:"chart"`
	AppVersion string `json:"appVersion,omitempty"`
	// Digest of the chart and values it was made from.
	Digest string `json:"digest"`
}

// StatusOf reads the status of a CR; whatever is not ours is dropped.
func StatusOf(obj *unstructured.Unstructured) Status {
	var st Status
	if m, ok := obj.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
	}
	return st
}

func (s *Status) set(generation int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(message), ObservedGeneration: generation,
	})
}

// setDeployed records the revision deployed now.
func (s *Status) setDeployed(generation int64, rel *helmrelease.Release) {
	md := rel.Chart.Metadata
	s.set(generation, TypeDeployed, metav1.ConditionTrue, successReason(rel.Version), fmt.Sprintf("revision %d of %s", rel.Version, chartName(md.Name, md.Version)))
	s.DeployedRelease = &DeployedRelease{
		Name: rel.Name, Version: rel.Version,
		Chart:      chartName(md.Name, md.Version),
		AppVersion: md.AppVersion,
		Digest:     rel.Labels[release.DigestLabel],
	}
}

// truncate keeps condition messages within the API's 32 KiB limit.
func truncate(s string) string {
	const max = 4096
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// rebase puts what this reconcile changed (ours, against base: the status it
// read) onto theirs, the status stored now. A reconcile that read the CR
// from a cache behind the API server must not write back what an earlier
// reconcile had since replaced: a DriftRepaired would become NoDrift.
func rebase(base, ours, theirs Status) Status {
	out := theirs
	out.Conditions = append([]metav1.Condition(nil), theirs.Conditions...)
	if ours.ObservedGeneration != base.ObservedGeneration {
		out.ObservedGeneration = ours.ObservedGeneration
	}
	if !equality.Semantic.DeepEqual(ours.DeployedRelease, base.DeployedRelease) {
		out.DeployedRelease = ours.DeployedRelease
	}
	if !equality.Semantic.DeepEqual(ours.Health, base.Health) {
		out.Health = ours.Health
	}
	for _, c := range ours.Conditions {
		if b := meta.FindStatusCondition(base.Conditions, c.Type); b == nil || !equality.Semantic.DeepEqual(*b, c) {
			out.Conditions = withCondition(out.Conditions, c)
		}
	}
	for _, b := range base.Conditions {
		if meta.FindStatusCondition(ours.Conditions, b.Type) == nil {
			meta.RemoveStatusCondition(&out.Conditions, b.Type)
		}
	}
	return out
}

// withCondition replaces the condition of c's type with c as it is
// (meta.SetStatusCondition would keep the old transition time).
func withCondition(conds []metav1.Condition, c metav1.Condition) []metav1.Condition {
	for i := range conds {
		if conds[i].Type == c.Type {
			conds[i] = c
			return conds
		}
	}
	return append(conds, c)
}
