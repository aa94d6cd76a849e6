package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

var testCreds = credentials{accessKeyID: "chartpilot-test", secret: "a-secret-of-forty-characters-0123456789"}

// server serves the store over a temporary directory.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := handler(t.TempDir(), testCreds)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func client(t *testing.T, srv *httptest.Server, id, secret string) *minio.Client {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: miniocreds.NewStaticV4(id, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A real S3 client puts and gets objects: a small one, one of unknown size
// (multipart, each part signed in streaming mode) and a key that needs
// encoding; a presigned URL reads without credentials.
func TestPutGetWithMinio(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	c := client(t, srv, testCreds.accessKeyID, testCreds.secret)
	if err := c.MakeBucket(ctx, "backups", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	objects := []struct {
		key  string
		data []byte
		size int64
	}{
		{"marker.txt", []byte("hello"), 5},
		{"ns/hello/data.tar", big, -1},
		{"a key with spaces+plus/ünïcode=.txt", []byte("encoded"), 7},
	}
	for _, o := range objects {
		if _, err := c.PutObject(ctx, "backups", o.key, bytes.NewReader(o.data), o.size, minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", o.key, err)
		}
		obj, err := c.GetObject(ctx, "backups", o.key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		if err != nil {
			t.Fatalf("get %s: %v", o.key, err)
		}
		if !bytes.Equal(got, o.data) {
			t.Errorf("get %s: %d bytes, want the %d put", o.key, len(got), len(o.data))
		}
	}
	var keys []string
	for o := range c.ListObjects(ctx, "backups", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	if len(keys) != len(objects) {
		t.Errorf("listed %q, want %d objects", keys, len(objects))
	}

	u, err := c.PresignedGetObject(ctx, "backups", "marker.txt", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Errorf("presigned GET: %s %q", resp.Status, body)
	}
}

// Requests without the store's credentials are refused with S3's codes.
func TestRefused(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	tests := []struct {
		name, id, secret, code string
	}{
		{"wrong secret", testCreds.accessKeyID, "not-the-secret-not-the-secret-not-the-se", "SignatureDoesNotMatch"},
		{"unknown access key", "someone-else", testCreds.secret, "InvalidAccessKeyId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := client(t, srv, tt.id, tt.secret).MakeBucket(ctx, "refused", minio.MakeBucketOptions{})
			var resp minio.ErrorResponse
			if !errors.As(err, &resp) || resp.Code != tt.code {
				t.Errorf("MakeBucket = %v, want %s", err, tt.code)
			}
		})
	}
	t.Run("unsigned", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "<Code>AccessDenied</Code>") {
			t.Errorf("unsigned GET: %s %s", resp.Status, body)
		}
	})
	t.Run("health needs no credentials", func(t *testing.T) {
		resp, err := http.Get(srv.URL + healthPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", healthPath, resp.Status)
		}
	})
}

func TestEncode(t *testing.T) {
	tests := []struct {
		in          string
		encodeSlash bool
		want        string
	}{
		{"/bucket/a b+c", false, "/bucket/a%20b%2Bc"},
		{"a/b", true, "a%2Fb"},
		{"AZaz09-_.~", true, "AZaz09-_.~"},
		{"ü=", true, "%C3%BC%3D"},
	}
	for _, tt := range tests {
		if got := encode(tt.in, tt.encodeSlash); got != tt.want {
			t.Errorf("encode(%q, %v) = %q, want %q", tt.in, tt.encodeSlash, got, tt.want)
		}
	}
}

func TestChunkReader(t *testing.T) {
	tests := []struct {
		name, body, want string
		wantErr          bool
	}{
		{"signed", "5;chunk-signature=abc\r\nhello\r\n0;chunk-signature=def\r\n\r\n", "hello", false},
		{"unsigned with a trailer", "3\r\nfoo\r\n2\r\nba\r\n0\r\nx-amz-checksum-crc32c:AAAAAA==\r\n\r\n", "fooba", false},
		{"trailer without the last empty line", "1\r\nx\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n", "x", false},
		{"no CRLF after data", "3\r\nfooX\r\n0\r\n\r\n", "", true},
		{"not hex", "zz\r\nfoo\r\n", "", true},
		{"truncated data", "9\r\nfoo", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := io.ReadAll(newChunkReader(strings.NewReader(tt.body)))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && string(got) != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
}

// Multipart uploads, kept on disk: parts complete into one object in the
// order listed; a wrong ETag, an unknown upload or bucket, and an aborted
// upload are refused with S3's codes.
func TestMultipart(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	core := &minio.Core{Client: client(t, srv, testCreds.accessKeyID, testCreds.secret)}
	if err := core.MakeBucket(ctx, "parts", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, key string) (string, []minio.CompletePart) {
		t.Helper()
		id, err := core.NewMultipartUpload(ctx, "parts", key, minio.PutObjectOptions{ContentType: "application/x-tar"})
		if err != nil {
			t.Fatal(err)
		}
		var parts []minio.CompletePart
		for i, data := range []string{"first-", "second-", "third"} {
			p, err := core.PutObjectPart(ctx, "parts", key, id, i+1, strings.NewReader(data), int64(len(data)), minio.PutObjectPartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
		}
		return id, parts
	}
	code := func(err error) string {
		var resp minio.ErrorResponse
		errors.As(err, &resp)
		return resp.Code
	}

	t.Run("complete", func(t *testing.T) {
		id, parts := start(t, "whole.tar")
		info, err := core.CompleteMultipartUpload(ctx, "parts", "whole.tar", id, parts, minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.ETag, "-3") {
			t.Errorf("ETag %q, want a multipart object's (-3)", info.ETag)
		}
		obj, err := core.Client.GetObject(ctx, "parts", "whole.tar", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(obj)
		st, _ := obj.Stat()
		if string(got) != "first-second-third" || st.ContentType != "application/x-tar" {
			t.Errorf("object %q (%s), want the parts in order with the upload's content type", got, st.ContentType)
		}
	})
	t.Run("wrong ETag", func(t *testing.T) {
		id, parts := start(t, "wrong.tar")
		parts[1].ETag = `"00000000000000000000000000000000"`
		_, err := core.CompleteMultipartUpload(ctx, "parts", "wrong.tar", id, parts, minio.PutObjectOptions{})
		if code(err) != "InvalidPart" {
			t.Errorf("complete = %v, want InvalidPart", err)
		}
	})
	t.Run("aborted", func(t *testing.T) {
		id, parts := start(t, "aborted.tar")
		if err := core.AbortMultipartUpload(ctx, "parts", "aborted.tar", id); err != nil {
			t.Fatal(err)
		}
		_, err := core.CompleteMultipartUpload(ctx, "parts", "aborted.tar", id, parts, minio.PutObjectOptions{})
		if code(err) != "NoSuchUpload" {
			t.Errorf("complete after abort = %v, want NoSuchUpload", err)
		}
	})
	t.Run("unknown upload", func(t *testing.T) {
		_, err := core.PutObjectPart(ctx, "parts", "x", "../../etc", 1, strings.NewReader("x"), 1, minio.PutObjectPartOptions{})
		if code(err) != "NoSuchUpload" {
			t.Errorf("part of an unknown upload = %v, want NoSuchUpload", err)
		}
	})
	t.Run("unknown bucket", func(t *testing.T) {
		_, err := core.NewMultipartUpload(ctx, "nobucket", "x", minio.PutObjectOptions{})
		if code(err) != "NoSuchBucket" {
			t.Errorf("initiate in an unknown bucket = %v, want NoSuchBucket", err)
		}
	})
}
