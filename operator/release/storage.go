package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/chartpilot/chartpilot/internal/gunzip"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/release"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// secretsDriver stores Helm releases in Secrets exactly as Helm does (one
// Secret of type helm.sh/release.v1 per revision, gzipped JSON, base64) when
// a release fits in one Secret, so the helm CLI and operator-sdk read them.
//
// A release too large for one Secret (the API server refuses more than 1 MiB;
// Helm itself cannot store it) is kept whole in Secrets of its own named
// <key>.part-N, and the release Secret holds its summary in Helm's format:
// everything but the manifest, the hooks and the chart's files, with a note
// in its description. Helm reads the summary (helm list, history and status
// work; helm get manifest shows nothing); this driver reads the whole.
type secretsDriver struct {
	secrets typedcorev1.SecretInterface
	// enc is shared by the drivers of a Client.
	enc *encoder
	log func(string, ...any)
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
	// absent holds, by name, the releases found without records a moment
	// ago (by the record index or a listing, see history), until Helm's
	// next query of them: an install asks again whether the name is in use
	// right after. Giving the same answer is safe: the create of the first
	// record refuses a name taken meanwhile.
	absent map[string]time.Time
}

// absentFor is how long a listing that found no records answers Helm's
// query of the same release.
const absentFor = 5 * time.Second

// defaultPartSize leaves room under the 1 MiB limit for the Secret's metadata.
const defaultPartSize = 1000 * 1024

// maxRecordSize is the most a release record's JSON may expand to when
// read: above Helm's own limit on a chart (100 MiB), far below what a
// Secret of 1 MiB can inflate to (1 GiB), which anyone who may write
// Secrets in a watched namespace could otherwise make the operator hold.
const maxRecordSize = 128 << 20

// TooManyPartsError means a release Secret's label counts more parts than
// a record of maxRecordSize needs: none of them is read.
type TooManyPartsError struct {
	// Secret is the release Secret, as namespace/name.
	Secret string
	// Parts is the count on its label, Limit the most taken.
	Parts, Limit int
}

func (e *TooManyPartsError) Error() string {
	return fmt.Sprintf("Secret %s counts %d parts, more than the %d of the largest release record read", e.Secret, e.Parts, e.Limit)
}

// maxRecordParts is the most Secrets a record may span: those of a record
// that expands to maxRecordSize stored uncompressed. A count past it on
// a label is refused before any part is read.
func (d *secretsDriver) maxRecordParts() int {
	return base64.StdEncoding.EncodedLen(maxRecordSize+maxRecordSize/1024+1024)/d.partSize + 1
}

const (
	// bodyPartsLabel on a release Secret holding a summary counts the parts
	// that hold the whole release.
	bodyPartsLabel = "chartpilot/body-parts"
	// partsLabel marks the earlier format, still read: the release Secret
	// held the first piece of the encoding, parts 2..N the rest.
	partsLabel  = "chartpilot/parts"
	partOfLabel = "chartpilot/part-of"
	releaseType = "helm.sh/release.v1"
)

var _ driver.Driver = (*secretsDriver)(nil)

func newSecretsDriver(secrets typedcorev1.SecretInterface, enc *encoder, log func(string, ...any), labels map[string]string) *secretsDriver {
	return &secretsDriver{secrets: secrets, enc: enc, log: log, partSize: defaultPartSize, labels: labels}
}

// Name is Helm's name for Secret storage.
func (d *secretsDriver) Name() string { return driver.SecretsDriverName }

// Helm 4's storage hands drivers releases as release.Releaser, which is any:
// the methods below are the driver's interface, the lower-case ones its
// typed implementation.

func (d *secretsDriver) Get(key string) (release.Releaser, error) { return releaser(d.get(key)) }

func (d *secretsDriver) List(filter func(release.Releaser) bool) ([]release.Releaser, error) {
	return releasers(d.list(func(r *helmrelease.Release) bool { return filter(r) }))
}

func (d *secretsDriver) Query(lbls map[string]string) ([]release.Releaser, error) {
	return releasers(d.queryHelm(lbls))
}

func (d *secretsDriver) Create(key string, r release.Releaser) error {
	rls, err := asRelease(r)
	if err != nil {
		return err
	}
	return d.create(key, rls)
}

func (d *secretsDriver) Update(key string, r release.Releaser) error {
	rls, err := asRelease(r)
	if err != nil {
		return err
	}
	return d.update(key, rls)
}

func (d *secretsDriver) Delete(key string) (release.Releaser, error) { return releaser(d.delete(key)) }

// asRelease is the Helm release record r holds.
func asRelease(r release.Releaser) (*helmrelease.Release, error) {
	switch rls := r.(type) {
	case *helmrelease.Release:
		return rls, nil
	case helmrelease.Release:
		return &rls, nil
	default:
		return nil, fmt.Errorf("release of type %T: only Helm's v1 release records are stored", r)
	}
}

// releaser returns rls as a Releaser that is nil when rls is.
func releaser(rls *helmrelease.Release, err error) (release.Releaser, error) {
	if rls == nil {
		return nil, err
	}
	return rls, err
}

func releasers(rs []*helmrelease.Release, err error) ([]release.Releaser, error) {
	if rs == nil {
		return nil, err
	}
	out := make([]release.Releaser, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out, err
}

func (d *secretsDriver) get(key string) (*helmrelease.Release, error) {
	obj, err := d.secrets.Get(context.Background(), key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting release %q: %w", key, err)
	}
	return d.decode(obj)
}

func (d *secretsDriver) list(filter func(*helmrelease.Release) bool) ([]*helmrelease.Release, error) {
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

func (d *secretsDriver) queryHelm(lbls map[string]string) ([]*helmrelease.Release, error) {
	if name := lbls["name"]; len(lbls) == 2 && lbls["owner"] == "helm" && d.takeAbsent(name) {
		return nil, driver.ErrReleaseNotFound
	}
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

// releaseRecords lists the records of the release name from the API server,
// and remembers for Helm's next query (see absent) that it has none.
func (d *secretsDriver) releaseRecords(name string) ([]*helmrelease.Release, error) {
	out, err := d.query(labels.Set{"owner": "helm", "name": name})
	if err == nil && len(out) == 0 {
		d.markAbsent(name)
	}
	return out, err
}

// markAbsent remembers that the release name was found without records,
// for Helm's next query of it.
func (d *secretsDriver) markAbsent(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.absent == nil {
		d.absent = map[string]time.Time{}
	}
	d.absent[name] = time.Now()
}

// takeAbsent reports, once, whether a listing found the release name
// without records within absentFor.
func (d *secretsDriver) takeAbsent(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.absent[name]
	delete(d.absent, name)
	return ok && time.Since(at) < absentFor
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

func (d *secretsDriver) create(key string, rls *helmrelease.Release) error {
	err := d.write(key, rls, "createdAt", func(s *corev1.Secret) (*corev1.Secret, error) {
		return d.secrets.Create(context.Background(), s, metav1.CreateOptions{})
	})
	if apierrors.IsAlreadyExists(err) {
		return driver.ErrReleaseExists
	}
	return err
}

func (d *secretsDriver) update(key string, rls *helmrelease.Release) error {
	return d.write(key, rls, "modifiedAt", func(s *corev1.Secret) (*corev1.Secret, error) {
		return d.secrets.Update(context.Background(), s, metav1.UpdateOptions{})
	})
}

func (d *secretsDriver) delete(key string) (*helmrelease.Release, error) {
	rls, err := d.get(key)
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
	return rls, d.deleteParts(key, 1)
}

// write stores rls: the parts first, so the release Secret, which readers
// look for, only ever points at parts that exist.
func (d *secretsDriver) write(key string, rls *helmrelease.Release, stamp string, put func(*corev1.Secret) (*corev1.Secret, error)) error {
	head, body, err := d.encodeRecord(key, rls)
	if err != nil {
		return err
	}
	lbls := map[string]string{}
	maps.Copy(lbls, rls.Labels)
	maps.Copy(lbls, d.labels)
	lbls["name"], lbls["owner"] = rls.Name, "helm"
	lbls["status"], lbls["version"] = rls.Info.Status.String(), strconv.Itoa(rls.Version)
	lbls[stamp] = strconv.FormatInt(time.Now().Unix(), 10)
	delete(lbls, partsLabel)
	delete(lbls, bodyPartsLabel)
	if len(body) > 0 {
		lbls[bodyPartsLabel] = strconv.Itoa(len(body))
	}
	for i, data := range body {
		if err := d.writePart(key, i+1, data); err != nil {
			return err
		}
	}
	main := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: lbls},
		Type:       releaseType,
		Data:       map[string][]byte{"release": head},
	}
	written, err := put(main)
	if err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.absent, rls.Name)
	before, known := d.parts[key]
	if d.parts == nil {
		d.parts = map[string]int{}
	}
	d.parts[key] = len(body)
	d.mu.Unlock()
	slim := slimRelease(rls)
	slim.Labels = maps.Clone(lbls)
	delete(slim.Labels, bodyPartsLabel)
	d.writes.wrote(rls.Name, key, cachedRecord{resourceVersion: written.ResourceVersion, release: slim})
	// A release that shrank leaves parts it no longer uses. A new record
	// has none, unless an earlier process died writing it (then they are
	// orphans nothing reads, removed with the release).
	if known && before <= len(body) || !known && stamp == "createdAt" && len(body) == 0 {
		return nil
	}
	return d.deleteParts(key, len(body)+1)
}

// encodeRecord returns what the release Secret holds and, for a release too
// large for it, the pieces of the whole release for the parts.
func (d *secretsDriver) encodeRecord(key string, rls *helmrelease.Release) (head []byte, body [][]byte, err error) {
	data, err := d.enc.encode(rls)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding release %q: %w", key, err)
	}
	if len(data) <= d.partSize {
		return data, nil, nil
	}
	body = split(data, d.partSize)
	for _, keepValues := range []bool{true, false} {
		if head, err = d.enc.encode(summary(rls, len(body), keepValues)); err != nil {
			return nil, nil, fmt.Errorf("encoding the summary of release %q: %w", key, err)
		}
		if len(head) <= d.partSize {
			return head, body, nil
		}
	}
	return nil, nil, fmt.Errorf("release %q: even its summary is %d bytes encoded, more than a Secret holds", key, len(head))
}

// summary is what Helm can read of a release stored in parts.
func summary(rls *helmrelease.Release, parts int, keepValues bool) *helmrelease.Release {
	s := *rls
	s.Manifest, s.Hooks = "", nil
	if rls.Chart != nil {
		s.Chart = &chart.Chart{Metadata: rls.Chart.Metadata}
	}
	if !keepValues {
		s.Config = nil
	}
	if rls.Info != nil {
		info := *rls.Info
		info.Description = fmt.Sprintf("%s (stored by chartpilot in %d parts: Helm sees no manifest, hooks or chart files)", info.Description, parts)
		s.Info = &info
	}
	return &s
}

func (d *secretsDriver) writePart(key string, n int, data []byte) error {
	part := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: partName(key, n), Labels: map[string]string{partOfLabel: key}},
		Type:       "chartpilot/release-part.v1",
		Data:       map[string][]byte{"part": data},
	}
	_, err := d.secrets.Create(context.Background(), part, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = d.secrets.Update(context.Background(), part, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing part %d of release %q: %w", n, key, err)
	}
	return nil
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

// decode reads the release of a Secret, fetching its parts if any.
func (d *secretsDriver) decode(s *corev1.Secret) (*helmrelease.Release, error) {
	secret := s.Namespace + "/" + s.Name
	data := s.Data["release"]
	body, _ := strconv.Atoi(s.Labels[bodyPartsLabel])
	earlier, _ := strconv.Atoi(s.Labels[partsLabel])
	if n := max(body, earlier); n > d.maxRecordParts() {
		return nil, &TooManyPartsError{Secret: secret, Parts: n, Limit: d.maxRecordParts()}
	}
	var err error
	if body > 0 {
		data, err = d.readParts(s.Name, 1, body, nil)
	} else if earlier > 1 {
		data, err = d.readParts(s.Name, 2, earlier, data)
	}
	if err != nil {
		return nil, err
	}
	rls, err := decode(data, "Secret "+secret)
	if err != nil {
		return nil, fmt.Errorf("decoding release %q: %w", s.Name, err)
	}
	rls.Labels = map[string]string{}
	for k, v := range s.Labels {
		if k != partsLabel && k != bodyPartsLabel {
			rls.Labels[k] = v
		}
	}
	return rls, nil
}

// readParts appends parts from..to of a record to first.
func (d *secretsDriver) readParts(key string, from, to int, first []byte) ([]byte, error) {
	buf := bytes.NewBuffer(append([]byte(nil), first...))
	for i := from; i <= to; i++ {
		part, err := d.secrets.Get(context.Background(), partName(key, i), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading part %d of %d of release %q: %w", i, to, key, err)
		}
		buf.Write(part.Data["part"])
	}
	return buf.Bytes(), nil
}

func partName(key string, n int) string { return fmt.Sprintf("%s.part-%d", key, n) }

// encoder writes Helm's release encoding: JSON, gzipped, base64. Its gzip
// writers are reused: each holds about 1 MiB of compressor state, and a new
// one per record written was a third of all the operator allocated while
// installing (two records per install), paid again in garbage collection.
type encoder struct {
	gzips sync.Pool
}

func (e *encoder) encode(rls *helmrelease.Release) ([]byte, error) {
	js, err := json.Marshal(rls)
	if err != nil {
		return nil, err
	}
	// What could not be read back is not written.
	if len(js) > maxRecordSize {
		return nil, fmt.Errorf("the release is %d bytes of JSON, more than the %d a record may expand to", len(js), maxRecordSize)
	}
	var buf bytes.Buffer
	w, _ := e.gzips.Get().(*gzip.Writer)
	if w == nil {
		if w, err = gzip.NewWriterLevel(&buf, gzip.BestCompression); err != nil {
			return nil, err
		}
	} else {
		w.Reset(&buf)
	}
	defer e.gzips.Put(w)
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
// old Helm versions, of the record source names; a record that expands
// past maxRecordSize is a *gunzip.TooLargeError.
func decode(data []byte, source string) (*helmrelease.Release, error) {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, data)
	if err != nil {
		return nil, err
	}
	raw = raw[:n]
	if bytes.HasPrefix(raw, gzipMagic) {
		if raw, err = gunzip.Bytes(raw, gunzip.Options{Limit: maxRecordSize, Source: source}); err != nil {
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
