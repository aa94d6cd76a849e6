// Package httpapitest compares two servers of catalogd's HTTP API, ours
// (package catalog/httpapi) and theirs (catalogd, or another of ours), by
// sending both the same requests and reporting every difference.
//
// Bodies are compared byte for byte: catalogd's order is not left open.
// Its stream is the metas of the catalog's files in fs.WalkDir's lexical
// order, read one file at a time (declcfg.WalkMetasFS with concurrency 1),
// each meta re-encoded with sorted keys; its metas answers are sections of
// that stream sorted by offset. A body that differs only in order is named
// as such, to tell an ordering bug from a content one.
//
// Headers are compared by value, but for those that cannot be equal on two
// servers: Date, and Last-Modified, which must be on both or neither and
// be an HTTP date on each (it is when each stored the catalog). The
// boundary of a multipart/byteranges answer, which net/http draws at
// random, is replaced in its Content-Type and body before both are compared.
// Compressed
// bodies are compared once decompressed, and their lengths not at all: two
// versions of a compressor need not give the same bytes.
//
// A test helper of stage catalog: it may import catalog and internal/, and
// must not import a later stage (olm, cluster, apply, doctor, cmd/).
package httpapitest
