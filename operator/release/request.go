package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/chartpilot/chartpilot/operator/values"
	"github.com/chartpilot/chartpilot/operator/watches"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"
)

// DigestLabel is the release label holding the digest of the chart and values
// it was made from.
const DigestLabel = "chartpilot/digest"

// Request is what a release should be.
type Request struct {
	// Name and Namespace of the release (the CR's, by convention).
	Name      string
	Namespace string
	Chart     *chart.Chart
	// Values are the user-supplied values (see package values).
	Values map[string]any
	// ChartDigest identifies Chart; see ChartDigest. Computed when empty.
	ChartDigest string
	// PostRenderer adjusts rendered objects (owner references, labels).
	PostRenderer postrenderer.PostRenderer
	// PostRenderDigest identifies what PostRenderer adds beyond the chart
	// and values (the HPAs a CR asks for); part of Digest when set, so that
	// a change to it upgrades the release.
	PostRenderDigest string
	// Timeout bounds each Helm action. Defaults to 5 minutes.
	Timeout time.Duration

	// ServerSideApply installs a new release with server-side apply;
	// otherwise Helm's three-way merge patch applies it (client-side). An
	// existing release keeps the method its latest revision records
	// (Helm 3's records, which record none, are client-side): see
	// docs/design/server-side-apply.md for why the default is client-side.
	ServerSideApply bool
	// UpgradeForce replaces objects that cannot be patched.
	UpgradeForce bool
	// RollbackForce is the rollback's force (operator-sdk defaults it to true).
	RollbackForce bool
	// UninstallWait waits for the release's objects to be gone.
	UninstallWait bool
	// DisableHooks per action.
	InstallDisableHooks, UpgradeDisableHooks, UninstallDisableHooks bool
	// DryRun is how a change is tried first; only a server one is run apart
	// (Helm renders and builds every object before it writes anything).
	DryRun watches.DryRun
	// LeaveDrift reports drift (Reconcile returns with the state Drifted)
	// instead of repairing it: the caller decided that something else
	// keeps editing the objects.
	LeaveDrift bool
	// SkipDrift skips the comparison with the cluster's objects (and with it
	// the readiness of the release's objects and the health gate).
	SkipDrift bool
	// HealthDeadline is how long a new revision has to become healthy:
	// one whose objects regress before (CrashLoopBackOff,
	// ProgressDeadlineExceeded, a failed Job) or are not healthy by then is
	// rolled back to the last revision recorded healthy. 0 turns the gate
	// off: no revision is watched or recorded healthy.
	HealthDeadline time.Duration
	// Generation is the CR's metadata.generation, recorded on each revision
	// (GenerationLabel): a rolled back request is retried only once the
	// CR's spec changes (or the chart, which changes the digest).
	Generation int64

	// digest caches Digest: a request's chart and values do not change.
	digest string
}

func (r *Request) timeout() time.Duration {
	if r.Timeout == 0 {
		return 5 * time.Minute
	}
	return r.Timeout
}

// Digest identifies the chart and values of the request.
func (r *Request) Digest() string {
	if r.digest != "" {
		return r.digest
	}
	if r.ChartDigest == "" {
		r.ChartDigest = ChartDigest(r.Chart)
	}
	in := r.ChartDigest + "\n" + values.Digest(r.Values)
	if r.PostRenderDigest != "" {
		in += "\n" + r.PostRenderDigest
	}
	sum := sha256.Sum256([]byte(in))
	// Label values are at most 63 characters: 128 bits are plenty.
	r.digest = hex.EncodeToString(sum[:16])
	return r.digest
}

// ChartDigest identifies a chart by everything that affects rendering: its
// metadata, templates, values, schema, files and, recursively, its
// dependencies.
func ChartDigest(ch *chart.Chart) string {
	h := sha256.New()
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		enc := json.NewEncoder(h)
		_ = enc.Encode(c.Metadata)
		_ = enc.Encode(c.Values)
		h.Write(c.Schema)
		for _, f := range c.Templates {
			h.Write([]byte("\x00t" + f.Name + "\x00"))
			h.Write(f.Data)
		}
		for _, f := range c.Files {
			h.Write([]byte("\x00f" + f.Name + "\x00"))
			h.Write(f.Data)
		}
		for _, d := range c.Dependencies() {
			h.Write([]byte("\x00d"))
			walk(d)
		}
	}
	walk(ch)
	return hex.EncodeToString(h.Sum(nil))
}
