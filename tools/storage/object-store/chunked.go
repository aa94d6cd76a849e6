package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// S3 clients upload in aws-chunked encoding (x-amz-content-sha256
// STREAMING-...): each chunk framed with its size, signed or not, and
// checksums in trailers after the last. gofakes3 decodes only the signed
// form without trailers, and only in a single PUT, not in the parts of a
// multipart upload: minio-go's uploads of unknown size would be stored with
// their framing. dechunk decodes every form before gofakes3 sees the
// request, streaming; the chunks' own signatures and the trailers'
// checksums are not checked (the request's seed signature is).

// errChunk says that an aws-chunked body is malformed.
var errChunk = errors.New("malformed aws-chunked body")

// dechunk rewrites a request whose body is aws-chunked into a plain one.
func dechunk(r *http.Request) error {
	if !strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		return nil
	}
	size, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil || size < 0 {
		return fmt.Errorf("an aws-chunked upload needs x-amz-decoded-content-length: %q", r.Header.Get("X-Amz-Decoded-Content-Length"))
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(newChunkReader(r.Body), size), r.Body}
	r.ContentLength = size
	r.Header.Set("Content-Length", strconv.FormatInt(size, 10))
	r.Header.Set("X-Amz-Content-Sha256", unsignedBody)
	r.Header.Del("X-Amz-Decoded-Content-Length")
	r.Header.Del("X-Amz-Trailer")
	var enc []string
	for _, e := range strings.Split(r.Header.Get("Content-Encoding"), ",") {
		if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
			enc = append(enc, e)
		}
	}
	if len(enc) == 0 {
		r.Header.Del("Content-Encoding")
	} else {
		r.Header.Set("Content-Encoding", strings.Join(enc, ","))
	}
	return nil
}

// chunkReader reads the data of an aws-chunked stream:
//
//	SIZE-IN-HEX[;chunk-signature=SIG]\r\n DATA \r\n ... 0[;...]\r\n [TRAILER\r\n]... \r\n
type chunkReader struct {
	r *bufio.Reader
	// left is what remains of the current chunk's data.
	left int64
	// started is set once the first chunk's header is read.
	started, done bool
}

func newChunkReader(r io.Reader) *chunkReader { return &chunkReader{r: bufio.NewReader(r)} }

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.nextChunk(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// nextChunk reads the end of the chunk before, then the next header; after
// the last (empty) chunk it reads the trailers.
func (c *chunkReader) nextChunk() error {
	if c.started {
		if line, err := c.line(); err != nil || line != "" {
			return fmt.Errorf("%w: no CRLF after a chunk's data", errChunk)
		}
	}
	c.started = true
	header, err := c.line()
	if err != nil {
		return err
	}
	sizeHex, _, _ := strings.Cut(header, ";")
	size, err := strconv.ParseInt(strings.TrimSpace(sizeHex), 16, 64)
	if err != nil || size < 0 {
		return fmt.Errorf("%w: chunk header %q", errChunk, header)
	}
	if size > 0 {
		c.left = size
		return nil
	}
	c.done = true
	for { // trailers, up to an empty line or the end
		line, err := c.line()
		if errors.Is(err, io.EOF) || (err == nil && line == "") {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line reads one CRLF-terminated line without its end.
func (c *chunkReader) line() (string, error) {
	s, err := c.r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && s != "" {
			return "", fmt.Errorf("%w: truncated", errChunk)
		}
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r"), nil
}
