package release

import (
	"encoding/base64"
	"errors"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/internal/gunzip"
	"github.com/chartpilot/chartpilot/internal/gunzip/gunziptest"
)

// A release Secret anyone who writes Secrets in a watched namespace could
// make is refused before the operator holds more than maxRecordSize of it:
// a gzip bomb, and a label counting more parts than a record can have
// (the driver has no client: reading a part would panic).
func TestDecodeRefusesOversizedRecords(t *testing.T) {
	const ns, name = "tenant", "sh.helm.release.v1.a.v1"
	d := &secretsDriver{partSize: defaultPartSize, enc: &encoder{}}
	tests := []struct {
		name string
		// secret makes the release Secret read.
		secret func(t *testing.T) *corev1.Secret
		// check looks at the error.
		check func(t *testing.T, err error)
	}{{
		name: "a record that fits is read",
		secret: func(t *testing.T) *corev1.Secret {
			data, err := d.enc.encode(testRelease("a", 1, "kind: A"))
			if err != nil {
				t.Fatal(err)
			}
			return releaseSecret(ns, name, data, nil)
		},
		check: func(t *testing.T, err error) {
			if err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name: "gzip bomb: 256 KiB expanding to 256 MiB",
		secret: func(t *testing.T) *corev1.Secret {
			bomb := gunziptest.Bomb(t, 256)
			return releaseSecret(ns, name, []byte(base64.StdEncoding.EncodeToString(bomb)), nil)
		},
		check: func(t *testing.T, err error) {
			var tooLarge *gunzip.TooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("got %v, want a *gunzip.TooLargeError", err)
			}
			if want := "Secret " + ns + "/" + name; tooLarge.Source != want || tooLarge.Limit != maxRecordSize {
				t.Errorf("error names %q and %d, want %q and %d", tooLarge.Source, tooLarge.Limit, want, maxRecordSize)
			}
		},
	}, {
		name: "body parts past the largest record",
		secret: func(*testing.T) *corev1.Secret {
			return releaseSecret(ns, name, nil, map[string]string{bodyPartsLabel: "100000"})
		},
		check: wantTooManyParts(ns+"/"+name, 100000, d.maxRecordParts()),
	}, {
		name: "earlier parts past the largest record",
		secret: func(*testing.T) *corev1.Secret {
			return releaseSecret(ns, name, nil, map[string]string{partsLabel: strconv.Itoa(d.maxRecordParts() + 1)})
		},
		check: wantTooManyParts(ns+"/"+name, d.maxRecordParts()+1, d.maxRecordParts()),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.decode(tt.secret(t))
			tt.check(t, err)
		})
	}
}

func releaseSecret(ns, name string, data []byte, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Type:       releaseType,
		Data:       map[string][]byte{"release": data},
	}
}

func wantTooManyParts(secret string, parts, limit int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		var tooMany *TooManyPartsError
		if !errors.As(err, &tooMany) {
			t.Fatalf("got %v, want a *TooManyPartsError", err)
		}
		if tooMany.Secret != secret || tooMany.Parts != parts || tooMany.Limit != limit {
			t.Errorf("got %+v, want Secret %s, Parts %d, Limit %d", *tooMany, secret, parts, limit)
		}
	}
}
