package backup

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/internal/gunzip"
	"github.com/chartpilot/chartpilot/internal/gunzip/gunziptest"
)

// Contents read back as written; contents whose Secret was edited into a
// gzip bomb are refused before the operator holds more than
// maxContentsSize of them, the error naming the Secret and the limit.
func TestLoadContents(t *testing.T) {
	const ns, backup = "tenant", "nightly"
	tests := []struct {
		name string
		// data is what the contents Secret holds.
		data func(t *testing.T) []byte
		// check looks at what was read.
		check func(t *testing.T, c *Contents, err error)
	}{{
		name: "contents written are read",
		data: func(t *testing.T) []byte {
			data, err := encodeContents(&Contents{Release: "r", Revision: 3})
			if err != nil {
				t.Fatal(err)
			}
			return data
		},
		check: func(t *testing.T, c *Contents, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if c.Release != "r" || c.Revision != 3 {
				t.Errorf("read %+v", c)
			}
		},
	}, {
		name: "gzip bomb: 1 MiB expanding to 1 GiB",
		data: func(t *testing.T) []byte { return gunziptest.Bomb(t, 1024) },
		check: func(t *testing.T, _ *Contents, err error) {
			var tooLarge *gunzip.TooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("got %v, want a *gunzip.TooLargeError", err)
			}
			if want := "Secret " + ns + "/" + contentsSecretName(backup); tooLarge.Source != want || tooLarge.Limit != maxContentsSize {
				t.Errorf("error names %q and %d, want %q and %d", tooLarge.Source, tooLarge.Limit, want, maxContentsSize)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contentsSecretName(backup)},
				Data:       map[string][]byte{contentsKey: tt.data(t)},
			}
			c, err := loadContents(context.Background(), secretReader{s}, ns, backup)
			tt.check(t, c, err)
		})
	}
}

// Contents too large to be read back are not written.
func TestEncodeContentsRefusesWhatCannotBeRead(t *testing.T) {
	c := &Contents{Values: map[string]any{"big": strings.Repeat("x", maxContentsSize)}}
	if _, err := encodeContents(c); err == nil {
		t.Fatal("contents past maxContentsSize were encoded")
	}
}

// secretReader reads one Secret.
type secretReader struct{ s *corev1.Secret }

func (r secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key != client.ObjectKeyFromObject(r.s) {
		return errors.New("no such Secret")
	}
	r.s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// A restore takes contents that match the digest their Backup recorded;
// edited ones are refused (ErrContentsTampered), and contents without a
// digest go into their own namespace only (ErrContentsUnverified).
func TestCheckDigest(t *testing.T) {
	data, err := encodeContents(&Contents{Release: "r"})
	if err != nil {
		t.Fatal(err)
	}
	edited, err := encodeContents(&Contents{Release: "r", Values: map[string]any{"rbac": "cluster-admin"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		data      []byte
		want      string
		elsewhere bool
		err       error
	}{
		{name: "as written", data: data, want: contentsDigest(data)},
		{name: "as written, into another namespace", data: data, want: contentsDigest(data), elsewhere: true},
		{name: "edited", data: edited, want: contentsDigest(data), err: ErrContentsTampered},
		{name: "edited, into another namespace", data: edited, want: contentsDigest(data), elsewhere: true, err: ErrContentsTampered},
		{name: "emptied", data: nil, want: contentsDigest(data), err: ErrContentsTampered},
		{name: "a digest of another algorithm", data: data, want: "sha1:" + contentsDigest(data)[len("sha256:"):], err: ErrContentsTampered},
		{name: "no digest, own namespace", data: edited},
		{name: "no digest, into another namespace", data: data, elsewhere: true, err: ErrContentsUnverified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkDigest(tt.data, tt.want, tt.elsewhere); !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Errorf("checkDigest = %v, want %v", err, tt.err)
			}
		})
	}
}

// The check sees the Secret's data before anything is decoded, and its
// error, wrapped with the backup and the Secret named, is still told
// apart by errors.Is.
func TestLoadCheckedContents(t *testing.T) {
	const ns, backup = "tenant", "nightly"
	data, err := encodeContents(&Contents{Release: "r"})
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contentsSecretName(backup)}, Data: map[string][]byte{contentsKey: data}}
	_, err = loadCheckedContents(context.Background(), secretReader{s}, ns, backup, func(got []byte) error {
		return checkDigest(got, "sha256:0000", false)
	})
	if !errors.Is(err, ErrContentsTampered) || !strings.Contains(err.Error(), contentsSecretName(backup)) {
		t.Errorf("got %v, want ErrContentsTampered naming Secret %s", err, contentsSecretName(backup))
	}
	c, err := loadCheckedContents(context.Background(), secretReader{s}, ns, backup, func(got []byte) error {
		return checkDigest(got, contentsDigest(data), true)
	})
	if err != nil || c.Release != "r" {
		t.Errorf("contents as written: %+v, %v", c, err)
	}
}
