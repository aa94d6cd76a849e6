package render

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

var mermaidUnsafe = regexp.MustCompile(`[^A-Za-z0-9_]`)

// WriteMermaid draws each package as a subgraph holding one subgraph per
// channel; nodes are bundles (name and version), edges point from the
// installed bundle to its upgrade: "replaces" and "skips" edges as written,
// and skipRange edges into each channel's head (the ranges of other entries
// are noted on their nodes, drawing all of them would bury the chain).
// Deprecated bundles, channels and packages are marked.
func WriteMermaid(w io.Writer, cfg *declcfg.DeclarativeConfig) error {
	gi, err := newGraphInput(cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	b.WriteString("  classDef deprecated fill:#f5d0a9,stroke:#b45f06\n")
	b.WriteString("  classDef head stroke-width:3px\n")
	for _, p := range gi.pkgs {
		pkgID := "pkg_" + mermaidUnsafe.ReplaceAllString(p, "_")
		label := p
		if gi.isDeprecated(p, declcfg.SchemaPackage, "") {
			label += " (deprecated)"
		}
		fmt.Fprintf(&b, "  subgraph %s[%q]\n", pkgID, label)
		for _, ch := range gi.sortedChannels(p) {
			chID := pkgID + "__" + mermaidUnsafe.ReplaceAllString(ch.Name, "_")
			chLabel := ch.Name
			if gi.isDeprecated(p, declcfg.SchemaChannel, ch.Name) {
				chLabel += " (deprecated)"
			}
			fmt.Fprintf(&b, "    subgraph %s[%q]\n", chID, chLabel)
			writeChannelMermaid(&b, chID, ch, gi.versions[p], func(bundle string) bool {
				return gi.isDeprecated(p, declcfg.SchemaBundle, bundle)
			})
			b.WriteString("    end\n")
		}
		b.WriteString("  end\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func writeChannelMermaid(b *strings.Builder, chID string, ch declcfg.Channel, versions map[string]semver.Version, deprecated func(string) bool) {
	id := func(name string) string { return chID + "__" + mermaidUnsafe.ReplaceAllString(name, "_") }
	cg := newChannelGraph(ch, versions)
	known := map[string]bool{}
	for _, e := range cg.entries {
		known[e.Name] = true
		label := mermaidEscape(e.Name)
		if v, ok := versions[e.Name]; ok {
			label += "<br/>" + mermaidEscape(v.String())
		}
		if e.SkipRange != "" && e.Name != cg.head {
			label += "<br/>skipRange " + mermaidEscape(e.SkipRange)
		}
		fmt.Fprintf(b, "      %s[%q]\n", id(e.Name), label)
		if deprecated(e.Name) {
			fmt.Fprintf(b, "      class %s deprecated\n", id(e.Name))
		}
	}
	if cg.head != "" {
		fmt.Fprintf(b, "      class %s head\n", id(cg.head))
	}
	node := func(name string) string {
		if known[name] {
			return id(name)
		}
		// An edge out of the channel (e.g. the tail replacing a removed bundle).
		known[name] = true
		return fmt.Sprintf("%s[%q]", id(name), mermaidEscape(name)+" (not in channel)")
	}
	for _, e := range cg.edges {
		switch e.kind {
		case "replaces":
			fmt.Fprintf(b, "      %s -- replaces --> %s\n", node(e.from), id(e.to))
		case "skips":
			fmt.Fprintf(b, "      %s -. skips .-> %s\n", node(e.from), id(e.to))
		default:
			fmt.Fprintf(b, "      %s -. %q .-> %s\n", id(e.from), "skipRange "+mermaidEscape(e.skipRange), id(e.to))
		}
	}
}

// mermaidEscape writes < and > as mermaid entity codes, so that ranges
// are not read as HTML.
func mermaidEscape(s string) string {
	return strings.NewReplacer("<", "#lt;", ">", "#gt;", `"`, "#quot;").Replace(s)
}
