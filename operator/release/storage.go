package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"sync"
	"time"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// secretsDriver stores Helm releases in Secrets exactly as Helm does (one
// Secret of type helm.sh/release.v1 per revision, gzipped JSON, base64) when
// a release fits in one Secret, so the helm CLI and operator-sdk read them.
// A release too large for one Secret (the API server refuses more than 1 MiB)
// is split: the first part in that Secret, labelled with the number of parts,
// the rest in Secrets of its own named <key>.part-N.
type secretsDriver struct {
	secrets typedcorev1.SecretInterface
	log     func(string, ...any)
	// partSize is the most base64 bytes one Secret holds.
	partSize int
	// labels are put on every release Secret written, for the record index.
	labels map[string]string
	// writes are those the record index has yet to show.
	writes writeLog

	mu sync.Mutex
	// parts counts the Secrets of each record this driver wrote, so that a
	// rewrite only looks for parts to delete when it has fewer.
	parts map[string]int
}

// defaultPartSize leaves room under the 1 MiB limit for the Secret's metadata.
const defaultPartSize = 1000 * 1024

const (
	partsLabel  = "chartpilot/parts"
	partOfLabel = "chartpilot/part-of"
	releaseType = "helm.sh/release.v1"
)

var _ driver.Driver = (*secretsDriver)(nil)

func newSecretsDriver(secrets typedcorev1.SecretInterface, log func(string, ...any), labels map[string]string) *secretsDriver {
	return &secretsDriver{secrets: secrets, log: log, partSize: defaultPartSize, labels: labels}
}

// Name is Helm's name for Secret storage.
func (d *secretsDriver) Name() string { return driver.SecretsDriverName }

func (d *secretsDriver) Get(key string) (*helmrelease.Release, error) {
	obj, err := d.secrets.Get(context.Background(), key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting release %q: %w", key, err)
	}
	return d.decode(obj)
}

func (d *secretsDriver) List(filter func(*helmrelease.Release) bool) ([]*helmrelease.Release, error) {
	all, err := d.query(labels.Set{"owner": "helm"})
	if err != nil {
		return nil, err
	}
	var out []*helmrelease.Release
	for _, r := range all {
		if filter(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (d *secretsDriver) Query(lbls map[string]string) ([]*helmrelease.Release, error) {
	out, err := d.query(labels.Set(lbls))
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

func (d *secretsDriver) query(set labels.Set) ([]*helmrelease.Release, error) {
	list, err := d.secrets.List(context.Background(), metav1.ListOptions{LabelSelector: set.AsSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	var out []*helmrelease.Release
	for i := range list.Items {
		r, err := d.decode(&list.Items[i])
		if err != nil {
			d.log("skipping release %s: %v", list.Items[i].Name, err)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// getRecord reads one release Secret from the API server.
func (d *secretsDriver) getRecord(ctx context.Context, key string) (*helmrelease.Release, string, error) {
	obj, err := d.secrets.Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	r, err := d.decode(obj)
	if err != nil {
		return nil, "", err
	}
	return r, obj.ResourceVersion, nil
}

func (d *secretsDriver) Create(key string, rls *helmrelease.Release) error {
	err := d.write(key, rls, "createdAt", func(s *corev1.Secret) (*corev1.Secret, error) {
		return d.secrets.Create(context.Background(), s, metav1.CreateOptions{})
	})
	if apierrors.IsAlreadyExists(err) {
		return driver.ErrReleaseExists
	}
	return err
}

func (d *secretsDriver) Update(key string, rls *helmrelease.Release) error {
	return d.write(key, rls, "modifiedAt", func(s *corev1.Secret) (*corev1.Secret, error) {
		return d.secrets.Update(context.Background(), s, metav1.UpdateOptions{})
	})
}

func (d *secretsDriver) Delete(key string) (*helmrelease.Release, error) {
	rls, err := d.Get(key)
	if err != nil {
		return nil, err
	}
	if err := d.secrets.Delete(context.Background(), key, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deleting release %q: %w", key, err)
	}
	d.writes.wrote(rls.Name, key, cachedRecord{})
	d.mu.Lock()
	delete(d.parts, key)
	d.mu.Unlock()
	return rls, d.deleteParts(key, 2)
}

// write stores rls: the extra parts first, so the release Secret, which
// readers look for, only ever points at parts that exist.
func (d *secretsDriver) write(key string, rls *helmrelease.Release, stamp string, put func(*corev1.Secret) (*corev1.Secret, error)) error {
	data, err := encode(rls)
	if err != nil {
		return fmt.Errorf("encoding release %q: %w", key, err)
	}
	parts := split(data, d.partSize)
	lbls := map[string]string{}
	for k, v := range rls.Labels {
		lbls[k] = v
	}
	for k, v := range d.labels {
		lbls[k] = v
	}
	lbls["name"], lbls["owner"] = rls.Name, "helm"
	lbls["status"], lbls["version"] = rls.Info.Status.String(), strconv.Itoa(rls.Version)
	lbls[stamp] = strconv.FormatInt(time.Now().Unix(), 10)
	delete(lbls, partsLabel)
	if len(parts) > 1 {
		lbls[partsLabel] = strconv.Itoa(len(parts))
	}
	for i := 1; i < len(parts); i++ {
		part := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: partName(key, i+1), Labels: map[string]string{partOfLabel: key}},
			Type:       "chartpilot/release-part.v1",
			Data:       map[string][]byte{"part": parts[i]},
		}
		if _, err := d.secrets.Create(context.Background(), part, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			_, err = d.secrets.Update(context.Background(), part, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("writing part %d of release %q: %w", i+1, key, err)
			}
		} else if err != nil {
			return fmt.Errorf("writing part %d of release %q: %w", i+1, key, err)
		}
	}
	main := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: lbls},
		Type:       releaseType,
		Data:       map[string][]byte{"release": parts[0]},
	}
	written, err := put(main)
	if err != nil {
		return err
	}
	d.mu.Lock()
	before, known := d.parts[key]
	if d.parts == nil {
		d.parts = map[string]int{}
	}
	d.parts[key] = len(parts)
	d.mu.Unlock()
	slim := slimRelease(rls)
	slim.Labels = maps.Clone(lbls)
	delete(slim.Labels, partsLabel)
	d.writes.wrote(rls.Name, key, cachedRecord{resourceVersion: written.ResourceVersion, release: slim})
	// A release that shrank leaves parts it no longer uses. A new record
	// has none, unless an earlier process died writing it (then they are
	// orphans nothing reads, removed with the release).
	if known && before <= len(parts) || !known && stamp == "createdAt" && len(parts) == 1 {
		return nil
	}
	return d.deleteParts(key, len(parts)+1)
}

func (d *secretsDriver) deleteParts(key string, from int) error {
	list, err := d.secrets.List(context.Background(), metav1.ListOptions{LabelSelector: labels.Set{partOfLabel: key}.AsSelector().String()})
	if err != nil {
		return fmt.Errorf("listing the parts of release %q: %w", key, err)
	}
	var errs []error
	for _, s := range list.Items {
		for n := from; n <= from+len(list.Items); n++ {
			if s.Name == partName(key, n) {
				if err := d.secrets.Delete(context.Background(), s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// decode reads the release of a Secret, fetching its other parts if any.
func (d *secretsDriver) decode(s *corev1.Secret) (*helmrelease.Release, error) {
	data := s.Data["release"]
	if n, _ := strconv.Atoi(s.Labels[partsLabel]); n > 1 {
		buf := bytes.NewBuffer(append([]byte(nil), data...))
		for i := 2; i <= n; i++ {
			part, err := d.secrets.Get(context.Background(), partName(s.Name, i), metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("reading part %d of %d of release %q: %w", i, n, s.Name, err)
			}
			buf.Write(part.Data["part"])
		}
		data = buf.Bytes()
	}
	rls, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding release %q: %w", s.Name, err)
	}
	rls.Labels = map[string]string{}
	for k, v := range s.Labels {
		if k != partsLabel {
			rls.Labels[k] = v
		}
	}
	return rls, nil
}

func partName(key string, n int) string { return fmt.Sprintf("%s.part-%d", key, n) }

// encode is Helm's release encoding: JSON, gzipped, base64.
func encode(rls *helmrelease.Release) ([]byte, error) {
	js, err := json.Marshal(rls)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(js); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(buf.Len()))
	base64.StdEncoding.Encode(out, buf.Bytes())
	return out, nil
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// decode reads Helm's encoding, including releases stored uncompressed by
// old Helm versions.
func decode(data []byte) (*helmrelease.Release, error) {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, data)
	if err != nil {
		return nil, err
	}
	raw = raw[:n]
	if bytes.HasPrefix(raw, gzipMagic) {
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if raw, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	var rls helmrelease.Release
	if err := json.Unmarshal(raw, &rls); err != nil {
		return nil, err
	}
	return &rls, nil
}

func split(data []byte, size int) [][]byte {
	var parts [][]byte
	for len(data) > size {
		parts = append(parts, data[:size])
		data = data[size:]
	}
	return append(parts, data)
}
