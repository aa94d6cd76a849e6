// Command s3client is TestRealNode's S3 client in a pod: it reads the
// object the test put from the host, prints it, and puts one of its own,
// with the endpoint and credentials from its environment (a Secret).
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: s3client BUCKET GET-KEY PUT-KEY PUT-VALUE")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4]); err != nil {
		fmt.Fprintln(os.Stderr, "s3client:", err)
		os.Exit(1)
	}
}

func run(bucket, getKey, putKey, value string) error {
	ctx := context.Background()
	c, err := minio.New(os.Getenv("S3_ENDPOINT"), &minio.Options{
		Creds:  credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
		Region: os.Getenv("AWS_REGION"),
	})
	if err != nil {
		return err
	}
	obj, err := c.GetObject(ctx, bucket, getKey, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	data, err := io.ReadAll(obj)
	if err != nil {
		return fmt.Errorf("get %s/%s: %w", bucket, getKey, err)
	}
	fmt.Printf("read %s/%s: %s\n", bucket, getKey, data)
	if _, err := c.PutObject(ctx, bucket, putKey, bytes.NewReader([]byte(value)), int64(len(value)), minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, putKey, err)
	}
	fmt.Printf("put %s/%s\n", bucket, putKey)
	return nil
}
