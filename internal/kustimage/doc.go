// Package kustimage finds what the `images:` entries of a kustomization
// tree rename an image to, so that an image given on the command line
// (`--image controller=REF`, the Makefile's IMG) replaces the image even
// after a base renamed it: operator-sdk's `kustomize edit set image
// controller=quay.io/me/op:v1` leaves such an entry in config/manager, and a
// later `images:` entry for "controller" alone would no longer match.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package kustimage
