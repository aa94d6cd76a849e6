// Package realnode runs the journey through images on a real node. It is a
// package of its own because the demo package's test binary holds the
// machine's lock of the one cluster with OLM for all its run: waiting there
// for the real node (another package's test may hold it for minutes) would
// hold up every package that needs that cluster.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package realnode
