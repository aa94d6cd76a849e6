package backup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/internal/gunzip"
	"github.com/chartpilot/chartpilot/operator/backup/api"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Contents is what a backup holds besides the volumes' files.
type Contents struct {
	// CR is the custom resource: apiVersion, kind, name, labels,
	// annotations and spec.
	CR map[string]any `json:"cr"`
	// Release is the backed-up release's name, chart and revision.
	Release      string `json:"release"`
	Chart        string `json:"chart"`
	ChartVersion string `json:"chartVersion"`
	Revision     int    `json:"revision"`
	// Values are the values the release was installed with.
	Values map[string]any `json:"values,omitempty"`
	// Secrets and ConfigMaps the release renders, as they are in the
	// cluster (values a chart generated once, kept through lookup, live
	// there only).
	Secrets    []corev1.Secret    `json:"secrets,omitempty"`
	ConfigMaps []corev1.ConfigMap `json:"configMaps,omitempty"`
	// Claims are the release's PersistentVolumeClaims; each has an archive.
	Claims []corev1.PersistentVolumeClaim `json:"claims,omitempty"`
	// Security is, per claim, the user and groups of the pods that used
	// it: the restore's mover writes the files back as them.
	Security map[string]*corev1.PodSecurityContext `json:"security,omitempty"`
	// Snapshots are, per claim kept by a VolumeSnapshot rather than an
	// archive, that snapshot (in the backup's namespace) and its class.
	Snapshots map[string]SnapshotRef `json:"snapshots,omitempty"`
}

// SnapshotRef names a claim's VolumeSnapshot.
type SnapshotRef struct {
	Name  string `json:"name"`
	Class string `json:"class"`
}

// contentsKey is the key of the contents in their Secret.
const contentsKey = "contents.json.gz"

// contentsSecretName is the name of a Backup's contents Secret.
// security is the user and groups a claim's movers run as: the
// operand's, as recorded when the backup started.
func (c *Contents) security(claim string) *corev1.PodSecurityContext {
	if sec := c.Security[claim]; sec != nil {
		return sec
	}
	return &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](DefaultMoverUser), RunAsGroup: ptr.To[int64](DefaultMoverUser)}
}

func contentsSecretName(backup string) string { return shorten(backup, "contents", "") }

// instanceLabel is the label charts put on what a release creates outside
// its manifest (the claims of a StatefulSet's volumeClaimTemplates).
const instanceLabel = "app.kubernetes.io/instance"

// collect reads the CR's release from the cluster: the objects its
// manifest names and the claims labelled with its instance.
func collect(ctx context.Context, r client.Reader, cr *unstructured.Unstructured, rel *helmrelease.Release, spec api.BackupSpec) (*Contents, error) {
	c := &Contents{
		CR: map[string]any{
			"apiVersion": cr.GetAPIVersion(), "kind": cr.GetKind(),
			"metadata": map[string]any{"name": cr.GetName(), "labels": toAny(cr.GetLabels()), "annotations": toAny(cr.GetAnnotations())},
		},
		Release: rel.Name, Revision: rel.Version, Values: rel.Config,
	}
	if spec, ok := cr.Object["spec"]; ok {
		c.CR["spec"] = spec
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		c.Chart, c.ChartVersion = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version
	}
	ns := cr.GetNamespace()
	claims := map[string]bool{}
	for _, ref := range manifestObjects(rel.Manifest) {
		if ref.GetNamespace() != "" && ref.GetNamespace() != ns {
			continue
		}
		key := client.ObjectKey{Namespace: ns, Name: ref.GetName()}
		switch ref.GetKind() {
		case "Secret":
			if spec.SkipSecrets {
				continue
			}
			var s corev1.Secret
			if err := getIfExists(ctx, r, key, &s); err != nil || s.Name == "" {
				if err != nil {
					return nil, err
				}
				continue
			}
			c.Secrets = append(c.Secrets, corev1.Secret{ObjectMeta: keptMeta(s.ObjectMeta), Type: s.Type, Data: s.Data, Immutable: s.Immutable})
		case "ConfigMap":
			if spec.SkipConfigMaps {
				continue
			}
			var cm corev1.ConfigMap
			if err := getIfExists(ctx, r, key, &cm); err != nil || cm.Name == "" {
				if err != nil {
					return nil, err
				}
				continue
			}
			c.ConfigMaps = append(c.ConfigMaps, corev1.ConfigMap{ObjectMeta: keptMeta(cm.ObjectMeta), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable})
		case "PersistentVolumeClaim":
			claims[ref.GetName()] = true
		}
	}
	var labelled corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &labelled, client.InNamespace(ns), client.MatchingLabels{instanceLabel: rel.Name}); err != nil {
		return nil, fmt.Errorf("listing the claims of release %s: %w", rel.Name, err)
	}
	for _, pvc := range labelled.Items {
		claims[pvc.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(claims)) {
		var pvc corev1.PersistentVolumeClaim
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pvc); err != nil {
			return nil, fmt.Errorf("reading PersistentVolumeClaim %s of release %s: %w", name, rel.Name, err)
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return nil, fmt.Errorf("PersistentVolumeClaim %s of release %s is %s, not Bound: %w", name, rel.Name, pvc.Status.Phase, errNotSettled)
		}
		c.Claims = append(c.Claims, corev1.PersistentVolumeClaim{ObjectMeta: keptMeta(pvc.ObjectMeta), Spec: claimSpec(pvc.Spec)})
	}
	return c, nil
}

// claimSpec is what a restored claim asks for: not the volume it was
// bound to, nor where its data came from.
func claimSpec(s corev1.PersistentVolumeClaimSpec) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: s.AccessModes, Resources: s.Resources, StorageClassName: s.StorageClassName,
		VolumeMode: s.VolumeMode, Selector: s.Selector, VolumeAttributesClassName: s.VolumeAttributesClassName,
	}
}

// keptMeta is the metadata a restore sets again: name, labels and
// annotations, without what the API server or controllers own.
func keptMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	ann := map[string]string{}
	for k, v := range m.Annotations {
		if !strings.HasPrefix(k, "pv.kubernetes.io/") && !strings.HasPrefix(k, "volume.") && k != "kubectl.kubernetes.io/last-applied-configuration" {
			ann[k] = v
		}
	}
	return metav1.ObjectMeta{Name: m.Name, Labels: m.Labels, Annotations: ann}
}

func getIfExists(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object) error {
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return nil
}

// manifestObjects are the objects of a release manifest (kind, namespace
// and name only matter here).
func manifestObjects(manifest string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.GetKind() != "" {
			out = append(out, u)
		}
	}
	return out
}

// maxContentsSize is the most a backup's contents may expand to when read:
// their Secret holds at most 1 MiB, which gzip could inflate to 1 GiB in
// the operator, and whoever may edit that Secret could make it so.
const maxContentsSize = 64 << 20

// encodeContents gzips the contents' JSON, if a restore can read it back.
func encodeContents(c *Contents) ([]byte, error) {
	js, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if len(js) > maxContentsSize {
		return nil, fmt.Errorf("the contents are %d bytes of JSON, more than the %d a restore reads", len(js), maxContentsSize)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(js); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeContents reads the contents source names (a Secret); contents
// that expand past maxContentsSize are a *gunzip.TooLargeError.
func decodeContents(data []byte, source string) (*Contents, error) {
	raw, err := gunzip.Bytes(data, gunzip.Options{Limit: maxContentsSize, Source: source})
	if err != nil {
		return nil, err
	}
	var c Contents
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// loadContents reads a Backup's contents from its Secret.
func loadContents(ctx context.Context, r client.Reader, namespace, backup string) (*Contents, error) {
	return loadCheckedContents(ctx, r, namespace, backup, nil)
}

// loadCheckedContents reads a Backup's contents from its Secret, after
// check (when not nil) accepted the Secret's data.
func loadCheckedContents(ctx context.Context, r client.Reader, namespace, backup string, check func([]byte) error) (*Contents, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: namespace, Name: contentsSecretName(backup)}
	if err := r.Get(ctx, key, &s); err != nil {
		return nil, fmt.Errorf("reading the contents of backup %s (Secret %s): %w", backup, key.Name, err)
	}
	if check != nil {
		if err := check(s.Data[contentsKey]); err != nil {
			return nil, fmt.Errorf("the contents of backup %s (Secret %s): %w", backup, key.Name, err)
		}
	}
	c, err := decodeContents(s.Data[contentsKey], "Secret "+key.String())
	if err != nil {
		return nil, fmt.Errorf("decoding the contents of backup %s (Secret %s): %w", backup, key.Name, err)
	}
	return c, nil
}

// contentsDigest is the digest a Backup records of its contents Secret's
// data.
func contentsDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Errors of checkDigest.
var (
	// ErrContentsTampered means the contents differ from the digest their
	// Backup recorded: someone edited the Secret since the backup.
	ErrContentsTampered = errors.New("the contents differ from the digest the backup recorded")
	// ErrContentsUnverified means the Backup recorded no digest (an
	// operator before digests made it) and the restore goes to another
	// namespace, where unchecked contents would write what a namespace
	// editor wrote.
	ErrContentsUnverified = errors.New("the backup recorded no digest of its contents, which a restore into another namespace requires: back up again")
)

// checkDigest says whether contents data may be restored, given the
// digest their Backup recorded (want) and whether the restore writes into
// another namespace. Contents without a digest are restored into their
// own namespace only, where whoever could edit them may write as much.
func checkDigest(data []byte, want string, elsewhere bool) error {
	switch {
	case want == "" && elsewhere:
		return ErrContentsUnverified
	case want == "":
		return nil
	case contentsDigest(data) != want:
		return ErrContentsTampered
	}
	return nil
}

func toAny(m map[string]string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
