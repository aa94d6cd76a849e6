package mover

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a bucket of an S3-compatible object store.
type S3 struct {
	Endpoint, Bucket, Region string
	// Insecure speaks plain HTTP.
	Insecure                     bool
	AccessKeyID, SecretAccessKey string
}

// partSize bounds what an upload of unknown size buffers: minio-go would
// otherwise size parts for the largest object S3 takes (hundreds of MiB).
const partSize = 16 << 20

// Client is a client of the store.
func (s S3) Client() (*minio.Client, error) {
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKeyID, s.SecretAccessKey, ""), Secure: !s.Insecure, Region: s.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 endpoint %s: %w", s.Endpoint, err)
	}
	return c, nil
}

// ArchiveS3 streams dir's archive to the object key: a multipart upload,
// which the store shows only once complete.
func ArchiveS3(ctx context.Context, dir string, s S3, key string) (Result, error) {
	c, err := s.Client()
	if err != nil {
		return Result{}, err
	}
	pr, pw := io.Pipe()
	done := make(chan Result, 1)
	go func() {
		res, err := Archive(dir, pw)
		pw.CloseWithError(err)
		done <- res
	}()
	info, err := c.PutObject(ctx, s.Bucket, key, pr, -1, minio.PutObjectOptions{ContentType: "application/gzip", PartSize: partSize})
	pr.CloseWithError(err)
	res := <-done
	if err != nil {
		return res, fmt.Errorf("uploading s3://%s/%s: %w", s.Bucket, key, err)
	}
	res.Size = info.Size
	return res, nil
}

// ExtractS3 extracts the archive at the object key under dir.
func ExtractS3(ctx context.Context, s S3, key, dir string) (Result, error) {
	if err := waitWritable(dir); err != nil {
		return Result{}, fmt.Errorf("the volume %s: %w", dir, err)
	}
	c, err := s.Client()
	if err != nil {
		return Result{}, err
	}
	obj, err := c.GetObject(ctx, s.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("reading s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer obj.Close()
	res, err := Extract(obj, dir)
	if err != nil {
		return res, fmt.Errorf("s3://%s/%s: %w", s.Bucket, key, err)
	}
	return res, nil
}

// RemoveS3 deletes the objects under prefix (a backup's archives) and
// returns how many and their bytes. A bucket that does not exist is
// ErrNoBucket.
func RemoveS3(ctx context.Context, s S3, prefix string) (Result, error) {
	c, err := s.Client()
	if err != nil {
		return Result{}, err
	}
	var res Result
	for obj := range c.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			if minio.ToErrorResponse(obj.Err).Code == minio.NoSuchBucket {
				return res, fmt.Errorf("s3://%s: %w", s.Bucket, ErrNoBucket)
			}
			return res, fmt.Errorf("listing s3://%s/%s: %w", s.Bucket, prefix, obj.Err)
		}
		if err := c.RemoveObject(ctx, s.Bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			return res, fmt.Errorf("deleting s3://%s/%s: %w", s.Bucket, obj.Key, err)
		}
		res.Files++
		res.Size += obj.Size
	}
	return res, nil
}

// ErrNoBucket means the bucket does not exist: nothing in it to delete.
var ErrNoBucket = errors.New("the bucket does not exist")
