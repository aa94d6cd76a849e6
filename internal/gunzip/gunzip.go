package gunzip

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// Options say how far data may expand and what it is.
type Options struct {
	// Limit is the most bytes the data may expand to; it must be positive.
	Limit int64
	// Source names where the data comes from (as "Secret ns/name"), for
	// the error that says it is too large.
	Source string
}

// TooLargeError means gzip data expands past its limit.
type TooLargeError struct {
	// Source names the data, as Options.Source.
	Source string
	// Limit is the limit passed.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the gzip data of %s expands past the limit of %d bytes", e.Source, e.Limit)
}

// Bytes returns the decompressed content of data (every gzip member of it,
// as gzip.Reader reads them), or a *TooLargeError once more than
// opts.Limit bytes come out: it never holds more than opts.Limit+1 of them.
func Bytes(data []byte, opts Options) ([]byte, error) {
	if opts.Limit <= 0 {
		return nil, fmt.Errorf("reading the gzip data of %s: limit %d is not positive", opts.Source, opts.Limit)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading the gzip data of %s: %w", opts.Source, err)
	}
	defer zr.Close()
	// One byte past the limit tells a stream that ends there from a longer one.
	out, err := io.ReadAll(io.LimitReader(zr, opts.Limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the gzip data of %s: %w", opts.Source, err)
	}
	if int64(len(out)) > opts.Limit {
		return nil, &TooLargeError{Source: opts.Source, Limit: opts.Limit}
	}
	return out, nil
}
