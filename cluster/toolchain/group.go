package toolchain

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// group is binaries that one go build builds together: they come from the
// same tools module with the same cgo setting and tags, so the go command
// compiles their shared packages once and links one binary while it still
// compiles another's packages. A go build per binary leaves a core idle
// through each link and each last package.
type group struct {
	// tools is the tools module the binaries are built in.
	tools string
	// cgo builds the group with cgo.
	cgo bool
	// tags are the build tags that set the group apart (see neutralTags).
	tags []string
	// module and overlay are the overlay of the group's binaries, files
	// of module replaced (see Binary.Overlay).
	module  string
	overlay map[string]string
	// bins are the binaries, in build order.
	bins []Binary
}

// neutralTags are build tags that select files only in packages that the
// binaries without them do not link: opm's json1 (sqlite's JSON functions)
// and containers_image_openpgp (containers/image's signature code in Go).
// A binary whose only tags are these joins the group of its module's other
// binaries, which then builds with them: go list -deps shows every other
// package with the same files either way (TestNeutralTagsChangeNoOtherBinary
// checks it on the pinned versions), and the go command's cache keys a
// package by its files, so each compiles as it would without the tags.
var neutralTags = []string{"json1", "containers_image_openpgp"}

// sameSettings says whether b builds with the group's settings.
func (g *group) sameSettings(b Binary) bool {
	return g.tools == b.source() && g.cgo == b.CGO && slices.Equal(g.tags, significantTags(b.Tags)) &&
		maps.Equal(g.overlay, b.Overlay) && (len(b.Overlay) == 0 || g.module == b.Module)
}

// significantTags are the sorted tags that are not neutral.
func significantTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if !slices.Contains(neutralTags, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// buildTags are the tags the group builds with: every tag of every binary.
func (g *group) buildTags() []string {
	var out []string
	for _, b := range g.bins {
		for _, t := range b.Tags {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// hasOutput says whether a binary of the group is written under name.
func (g *group) hasOutput(name string) bool {
	return slices.ContainsFunc(g.bins, func(b Binary) bool { return execName(b.Package) == name })
}

// groupBinaries splits bins into build groups. The groups come in the order of
// their first binary in bins, so the envtest binaries, which come first, are
// in the first group. Cgo and tags other than neutralTags separate groups:
// they change how shared packages compile. Link flags do not: each binary
// gets its own (see ldflagArgs). Two binaries whose files would have the same name go to
// different groups, since go build -o dir/ writes each under its name.
func groupBinaries(bins []Binary) []*group {
	var groups []*group
	for _, b := range bins {
		i := slices.IndexFunc(groups, func(g *group) bool {
			return g.sameSettings(b) && !g.hasOutput(execName(b.Package))
		})
		if i < 0 {
			groups = append(groups, &group{tools: b.source(), cgo: b.CGO, tags: significantTags(b.Tags), module: b.Module, overlay: b.Overlay})
			i = len(groups) - 1
		}
		groups[i].bins = append(groups[i].bins, b)
	}
	return groups
}

// String names the group in progress lines and errors: its tools module and
// what sets it apart from the module's other groups.
func (g *group) String() string {
	s := "the " + g.tools + " module"
	var with []string
	if g.cgo {
		with = append(with, "cgo")
	}
	if len(g.tags) > 0 {
		with = append(with, "tags "+strings.Join(g.tags, ","))
	}
	if len(with) > 0 {
		s += " (" + strings.Join(with, ", ") + ")"
	}
	return s
}

// names are the group's binaries' names.
func (g *group) names() []string {
	out := make([]string, 0, len(g.bins))
	for _, b := range g.bins {
		out = append(out, b.Name)
	}
	return out
}

// packages are the main packages the group builds.
func (g *group) packages() []string {
	out := make([]string, 0, len(g.bins))
	for _, b := range g.bins {
		out = append(out, b.Package)
	}
	return out
}

// ldflagArgs are the go build flags that give each binary its link flags.
// The first applies to every package named on the command line; a
// pattern=flags one for each binary with flags of its own overrides it for
// that binary alone (the go command takes the last match), so the
// Kubernetes version stamped into kube-apiserver never reaches kwok or olm,
// which link the same version packages. (go version -m shows the last
// -ldflags given for every binary of the build: the flags in effect are
// these.)
func (g *group) ldflagArgs(version func(Binary) string) []string {
	base := []string{"-s", "-w"}
	args := []string{"-ldflags=" + strings.Join(base, " ")}
	for _, b := range g.bins {
		if own := versionLDFlags(b.Module, version(b)); len(own) > 0 {
			args = append(args, "-ldflags="+b.Package+"="+strings.Join(append(base, own...), " "))
		}
	}
	return args
}

// versionElement matches a major version suffix of a module path (/v2, /v3...).
var versionElement = regexp.MustCompile(`^v[2-9][0-9]*$|^v[1-9][0-9]+$`)

// execName is the file name go build -o dir/ gives the binary of a main
// package: the last element of its import path, or the one before it when
// that is a major version suffix (go.etcd.io/etcd/server/v3 -> server).
func execName(pkg string) string {
	dir, elem := path.Split(pkg)
	if dir != "" && versionElement.MatchString(elem) {
		return path.Base(dir)
	}
	return elem
}
