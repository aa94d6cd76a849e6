package main

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// uploads serves multipart uploads with their parts on disk. gofakes3 keeps
// each part in memory until the upload completes, then joins them in
// memory too: measured, a 256 MiB upload in 16 MiB parts took its process
// to 600 MiB-1.1 GiB of resident memory, where a single PUT streams in
// 8 MiB. Here each part streams to a file, and completing the upload
// streams the files, in order, into the backend as one object.
type uploads struct {
	// dir holds one directory per upload in progress.
	dir     string
	backend gofakes3.Backend
}

// upload is what an upload in progress remembers, in its upload.json.
type upload struct {
	Bucket string            `json:"bucket"`
	Key    string            `json:"key"`
	Meta   map[string]string `json:"meta"`
}

// maxParts is S3's limit of parts in an upload.
const maxParts = 10000

// serve handles r when it is a request of a multipart upload and says so.
func (u *uploads) serve(w http.ResponseWriter, r *http.Request) bool {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	if bucket == "" || key == "" || !(q.Has("uploads") || q.Has("uploadId")) {
		return false
	}
	var err error
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		err = u.initiate(w, r, bucket, key)
	case r.Method == http.MethodPut && q.Has("partNumber") && r.Header.Get("X-Amz-Copy-Source") == "":
		err = u.part(w, r, q.Get("uploadId"), q.Get("partNumber"))
	case r.Method == http.MethodPost:
		err = u.complete(w, r, bucket, key, q.Get("uploadId"))
	case r.Method == http.MethodDelete:
		err = u.abort(w, q.Get("uploadId"))
	default:
		err = &s3Error{http.StatusNotImplemented, "NotImplemented", "this request of multipart uploads is not implemented"}
	}
	if err != nil {
		writeError(w, r, err)
	}
	return true
}

func (u *uploads) initiate(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	if ok, err := u.backend.BucketExists(bucket); err != nil {
		return err
	} else if !ok {
		return &s3Error{http.StatusNotFound, "NoSuchBucket", "no bucket " + bucket}
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	id := hex.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Join(u.dir, id), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(upload{Bucket: bucket, Key: key, Meta: objectMeta(r.Header)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(u.dir, id, "upload.json"), data, 0o600); err != nil {
		return err
	}
	return writeXML(w, gofakes3.InitiateMultipartUploadResult{Bucket: bucket, Key: key, UploadID: gofakes3.UploadID(id)})
}

// part streams one part to its file; its MD5 is its ETag.
func (u *uploads) part(w http.ResponseWriter, r *http.Request, id, number string) error {
	dir, _, err := u.open(id)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(number)
	if err != nil || n < 1 || n > maxParts {
		return &s3Error{http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("part number %q is not between 1 and %d", number, maxParts)}
	}
	tmp, err := os.CreateTemp(dir, "part-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	hash := md5.New()
	written, err := io.Copy(io.MultiWriter(tmp, hash), r.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if r.ContentLength >= 0 && written != r.ContentLength {
		return &s3Error{http.StatusBadRequest, "IncompleteBody", fmt.Sprintf("%d bytes of a part of %d", written, r.ContentLength)}
	}
	etag := hex.EncodeToString(hash.Sum(nil))
	if err := os.WriteFile(partFile(dir, n)+".etag", []byte(etag), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), partFile(dir, n)); err != nil {
		return err
	}
	w.Header().Set("ETag", `"`+etag+`"`)
	return nil
}

// complete streams the listed parts, in order, into the backend as one
// object, whose ETag is S3's for a multipart object.
func (u *uploads) complete(w http.ResponseWriter, r *http.Request, bucket, key, id string) error {
	dir, up, err := u.open(id)
	if err != nil {
		return err
	}
	if up.Bucket != bucket || up.Key != key {
		return &s3Error{http.StatusNotFound, "NoSuchUpload", "upload " + id + " is not of " + bucket + "/" + key}
	}
	var req gofakes3.CompleteMultipartUploadRequest
	if err := xml.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || len(req.Parts) == 0 {
		return &s3Error{http.StatusBadRequest, "MalformedXML", "the list of parts does not parse"}
	}
	var readers []io.Reader
	var size int64
	etags := md5.New()
	for i, p := range req.Parts {
		if i > 0 && p.PartNumber <= req.Parts[i-1].PartNumber {
			return &s3Error{http.StatusBadRequest, "InvalidPartOrder", "the parts are not in ascending order"}
		}
		etag, err := os.ReadFile(partFile(dir, p.PartNumber) + ".etag")
		if err != nil || strings.Trim(p.ETag, `"`) != string(etag) {
			return &s3Error{http.StatusBadRequest, "InvalidPart", fmt.Sprintf("part %d was not uploaded with ETag %s", p.PartNumber, p.ETag)}
		}
		f, err := os.Open(partFile(dir, p.PartNumber))
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		size += st.Size()
		readers = append(readers, f)
		sum, _ := hex.DecodeString(string(etag))
		etags.Write(sum)
	}
	if _, err := u.backend.PutObject(bucket, key, up.Meta, io.MultiReader(readers...), size, nil); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return writeXML(w, gofakes3.CompleteMultipartUploadResult{
		Location: "/" + bucket + "/" + key, Bucket: bucket, Key: key,
		ETag: fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(etags.Sum(nil)), len(req.Parts)),
	})
}

func (u *uploads) abort(w http.ResponseWriter, id string) error {
	dir, _, err := u.open(id)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// open finds an upload in progress by its ID (hex: it names a directory).
func (u *uploads) open(id string) (string, upload, error) {
	var up upload
	if _, err := hex.DecodeString(id); err != nil || id == "" {
		return "", up, &s3Error{http.StatusNotFound, "NoSuchUpload", "no upload " + id}
	}
	dir := filepath.Join(u.dir, id)
	data, err := os.ReadFile(filepath.Join(dir, "upload.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", up, &s3Error{http.StatusNotFound, "NoSuchUpload", "no upload " + id}
	}
	if err != nil {
		return "", up, err
	}
	return dir, up, json.Unmarshal(data, &up)
}

func partFile(dir string, n int) string { return filepath.Join(dir, fmt.Sprintf("part-%05d", n)) }

// objectMeta is the metadata an object keeps from the request that creates
// it, as gofakes3 keeps it for a single PUT.
func objectMeta(h http.Header) map[string]string {
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
	for k, v := range h {
		if strings.HasPrefix(k, "X-Amz-Meta-") || k == "Content-Type" || k == "Content-Disposition" || k == "Content-Encoding" {
			meta[k] = v[0]
		}
	}
	return meta
}

func writeXML(w http.ResponseWriter, v any) error {
	data, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	_, err = w.Write(append([]byte(xml.Header), data...))
	return err
}
