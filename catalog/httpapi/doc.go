// Package httpapi serves file-based catalogs over the HTTP API catalogd
// (OLM v1, operator-framework/operator-controller v1.2.0) serves each
// ClusterCatalog's content on, so that a client, or operator-controller
// given the URL, cannot tell a local catalog from one on a cluster:
//
//	GET|HEAD /catalogs/NAME/api/v1/all
//	GET|HEAD /catalogs/NAME/api/v1/metas?schema=S&package=P&name=N
//
// Load reads a catalog as catalogd stores it: every FBC meta of every file,
// files in lexical path order (fs.WalkDir's, honouring .indexignore), each
// meta re-encoded by operator-registry's declcfg.Meta as one line of
// compact JSON with its keys sorted. Nothing is validated beyond that, as
// catalogd validates nothing either: run catalog validate for that.
//
// The answers are catalogd's, down to its quirks:
//   - /api/v1/all is the whole stream through net/http's ServeContent:
//     Content-Type application/jsonl, Content-Length, Last-Modified (the
//     load time, as catalogd's is the time it stored the catalog),
//     Accept-Ranges and Range requests, the RFC 7232 preconditions. No ETag,
//     no Cache-Control.
//   - /api/v1/metas answers the metas whose schema, package and name equal
//     the non-empty parameters, in stream order; a meta without a schema is
//     only in the unfiltered answer, and an olm.package meta (which has a
//     name but no package field) never matches package=. No parameter gives
//     the whole stream without Content-Length or Range support. Another
//     parameter is 400; a repeated one counts once (its first value). It
//     has Last-Modified and evaluates If-Match, If-Unmodified-Since,
//     If-None-Match and If-Modified-Since as catalogd does (an
//     If-Modified-Since that is no HTTP date gives a 500 followed by the
//     body). catalogd (v1.11.0) serves it only with its APIV1MetasHandler
//     feature gate (alpha, off by default); DisableMetas answers as it does
//     without (404).
//   - A catalog the server does not have is "404 Not Found"; any other path
//     is the ServeMux's "404 page not found", whatever the method; a method
//     other than GET and HEAD on all or metas is 405.
//   - Responses of 1 KiB or more are compressed for a client that accepts
//     it (klauspost/compress gzhttp with its defaults, as catalogd): zstd
//     where the client takes it, else gzip; every response says
//     Vary: Accept-Encoding.
//
// NewServer listens on loopback unless told otherwise, over HTTPS as
// catalogd does (HTTP/1.1 only, TLS 1.2 or later) with a certificate given
// or generated at start, or over plain HTTP.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages and internal/, and must not
// import a later stage (olm, cluster, apply, doctor, cmd/).
package httpapi
