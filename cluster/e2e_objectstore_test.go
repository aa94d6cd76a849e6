package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// The cluster's object store answers a real S3 client on this host with
// the credentials the cluster generated, and refuses other credentials.
func TestObjectStorePutGet(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	store, err := env.Cluster.ObjectStore()
	if err != nil {
		t.Fatal(err)
	}
	if store.PodEndpoint != "" {
		t.Errorf("pod endpoint %q on a kwok node, whose pods never run", store.PodEndpoint)
	}
	c := s3Client(t, store, store.SecretAccessKey)
	if err := c.MakeBucket(ctx, "backups", minio.MakeBucketOptions{Region: store.Region}); err != nil {
		t.Fatal(err)
	}
	want := []byte("a marker")
	if _, err := c.PutObject(ctx, "backups", "hello/marker", bytes.NewReader(want), int64(len(want)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, "backups", "hello/marker", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("get = %q, %v; want %q", got, err, want)
	}

	// GetObject sends nothing until read.
	if obj, err = s3Client(t, store, "not-"+store.SecretAccessKey).GetObject(ctx, "backups", "hello/marker", minio.GetObjectOptions{}); err == nil {
		_, err = io.ReadAll(obj)
	}
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) || resp.Code != "SignatureDoesNotMatch" {
		t.Errorf("with a wrong secret: %v, want SignatureDoesNotMatch", err)
	}

	var found bool
	for _, s := range env.Cluster.Status(ctx) {
		if s.Name == cluster.ObjectStoreName {
			found = s.Healthy && s.Endpoint == "http://"+store.Endpoint
		}
	}
	if !found {
		t.Errorf("status has no healthy %s at http://%s", cluster.ObjectStoreName, store.Endpoint)
	}
}

func s3Client(t *testing.T, store cluster.ObjectStore, secret string) *minio.Client {
	t.Helper()
	c, err := minio.New(store.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(store.AccessKeyID, secret, ""), Region: store.Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
