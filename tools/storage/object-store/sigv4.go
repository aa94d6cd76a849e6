package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AWS Signature Version 4, as S3 checks it: the signature of the request's
// method, path, query, signed headers and declared payload hash, in the
// Authorization header or in the query (a presigned URL). The payload is
// not hashed again; in a streaming upload the seed signature is checked,
// not each chunk's.
const (
	algorithm     = "AWS4-HMAC-SHA256"
	unsignedBody  = "UNSIGNED-PAYLOAD"
	amzDateFormat = "20060102T150405Z"
	// maxSkew is how far a request's date may be from now, as S3 allows.
	maxSkew = 15 * time.Minute
)

type credentials struct{ accessKeyID, secret string }

// signatureError is a denial with S3's error code.
type signatureError struct{ code, msg string }

func (e *signatureError) Error() string { return e.msg }

func denied(code, format string, args ...any) error {
	return &signatureError{code: code, msg: fmt.Sprintf(format, args...)}
}

// signed are the parts of a request's signature.
type signed struct {
	accessKeyID string
	// scope is DATE/REGION/SERVICE/aws4_request.
	scope         string
	date, region  string
	service       string
	headers       []string
	signature     string
	amzDate       string
	payloadHash   string
	presigned     bool
	expiresInSecs int
}

// verify checks r's signature with c at time now.
func (c credentials) verify(r *http.Request, now time.Time) error {
	s, err := parse(r)
	if err != nil {
		return err
	}
	if s.accessKeyID != c.accessKeyID {
		return denied("InvalidAccessKeyId", "the access key %q is not this store's", s.accessKeyID)
	}
	at, err := time.Parse(amzDateFormat, s.amzDate)
	if err != nil {
		return denied("AccessDenied", "the request's date %q is not %s", s.amzDate, amzDateFormat)
	}
	if !strings.HasPrefix(s.amzDate, s.date) {
		return denied("SignatureDoesNotMatch", "the credential's date %s is not the request's %s", s.date, s.amzDate)
	}
	if s.presigned {
		if now.After(at.Add(time.Duration(s.expiresInSecs) * time.Second)) {
			return denied("AccessDenied", "the presigned request expired")
		}
	} else if d := now.Sub(at); d > maxSkew || d < -maxSkew {
		return denied("RequestTimeTooSkewed", "the request's time is %s from the store's", d.Round(time.Second))
	}
	want := c.signature(s, canonicalRequest(r, s))
	got, err := hex.DecodeString(s.signature)
	if err != nil || !hmac.Equal(got, want) {
		return denied("SignatureDoesNotMatch", "the request's signature does not match")
	}
	return nil
}

// parse reads the signature from the Authorization header or the query.
func parse(r *http.Request) (signed, error) {
	var s signed
	q := r.URL.Query()
	var credential, signedHeaders string
	if auth := r.Header.Get("Authorization"); auth != "" {
		rest, ok := strings.CutPrefix(auth, algorithm+" ")
		if !ok {
			return s, denied("AccessDenied", "only %s signatures are accepted", algorithm)
		}
		for _, part := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch k {
			case "Credential":
				credential = v
			case "SignedHeaders":
				signedHeaders = v
			case "Signature":
				s.signature = v
			}
		}
		s.amzDate = r.Header.Get("X-Amz-Date")
		s.payloadHash = r.Header.Get("X-Amz-Content-Sha256")
		if s.payloadHash == "" {
			return s, denied("AccessDenied", "the request has no x-amz-content-sha256 header")
		}
	} else if q.Get("X-Amz-Algorithm") != "" {
		if q.Get("X-Amz-Algorithm") != algorithm {
			return s, denied("AccessDenied", "only %s signatures are accepted", algorithm)
		}
		s.presigned = true
		credential, signedHeaders, s.signature = q.Get("X-Amz-Credential"), q.Get("X-Amz-SignedHeaders"), q.Get("X-Amz-Signature")
		s.amzDate, s.payloadHash = q.Get("X-Amz-Date"), unsignedBody
		exp, err := strconv.Atoi(q.Get("X-Amz-Expires"))
		if err != nil || exp < 0 {
			return s, denied("AccessDenied", "X-Amz-Expires %q is not a number of seconds", q.Get("X-Amz-Expires"))
		}
		s.expiresInSecs = exp
	} else {
		return s, denied("AccessDenied", "the request is not signed")
	}
	parts := strings.Split(credential, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" || signedHeaders == "" || s.signature == "" {
		return s, denied("AccessDenied", "the signature's credential, signed headers or signature is malformed")
	}
	s.accessKeyID, s.date, s.region, s.service = parts[0], parts[1], parts[2], parts[3]
	s.scope = strings.Join(parts[1:], "/")
	s.headers = strings.Split(signedHeaders, ";")
	if !slices.Contains(s.headers, "host") {
		return s, denied("AccessDenied", "the host header is not signed")
	}
	return s, nil
}

// canonicalRequest is the text the client signed (its hash goes into the
// string to sign).
func canonicalRequest(r *http.Request, s signed) string {
	var headers strings.Builder
	for _, h := range s.headers {
		headers.WriteString(h + ":" + headerValue(r, h) + "\n")
	}
	return strings.Join([]string{
		r.Method,
		encode(r.URL.Path, false),
		canonicalQuery(r.URL.Query(), s.presigned),
		headers.String(),
		strings.Join(s.headers, ";"),
		s.payloadHash,
	}, "\n")
}

// headerValue is a signed header's value as signed: values joined by
// commas, spaces trimmed and runs of them collapsed. The server keeps Host
// apart from the other headers.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "content-length":
		vals = r.Header.Values(name)
		if len(vals) == 0 {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	default:
		vals = r.Header.Values(name)
	}
	for i, v := range vals {
		vals[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(vals, ",")
}

// canonicalQuery sorts the query by name, then value, each encoded; a
// presigned URL's own signature is left out.
func canonicalQuery(q url.Values, presigned bool) string {
	var pairs []string
	for k, vs := range q {
		if presigned && k == "X-Amz-Signature" {
			continue
		}
		for _, v := range vs {
			pairs = append(pairs, encode(k, true)+"="+encode(v, true))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// encode percent-encodes all but the unreserved characters (and '/' in a
// path), upper-case hex, as Signature Version 4 does.
func encode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'A' <= ch && ch <= 'Z', 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9',
			ch == '-', ch == '_', ch == '.', ch == '~', ch == '/' && !encodeSlash:
			b.WriteByte(ch)
		default:
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// signature is the expected signature of the canonical request.
func (c credentials) signature(s signed, canonical string) []byte {
	sum := sha256.Sum256([]byte(canonical))
	toSign := strings.Join([]string{algorithm, s.amzDate, s.scope, hex.EncodeToString(sum[:])}, "\n")
	key := hmacSHA256([]byte("AWS4"+c.secret), s.date)
	for _, part := range []string{s.region, s.service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	return hmacSHA256(key, toSign)
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}
