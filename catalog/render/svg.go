package render

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// The geometry of the SVG drawing, in pixels.
const (
	svgMargin     = 16
	svgCharWidth  = 7 // of the 12px monospace labels
	svgNodeHeight = 40
	svgMinNode    = 96
	svgColumnGap  = 56
	svgRowGap     = 20
	svgTitle      = 28 // the height of a channel's title
	svgArcStep    = 18 // how much higher an edge arcs per layer it jumps
	svgArcMax     = 120
)

// WriteSVG draws the upgrade graph of every channel as an SVG picture: one
// panel per package and channel, bundles as boxes laid out in layers from
// left to right (each bundle one layer right of the newest bundle it
// upgrades from, so a replaces chain is a row), and edges from the installed
// bundle to its upgrade: solid for replaces, dashed for skips, dotted for
// the head's skipRange. Edges that jump layers arc above the row. The head
// has a thick border; deprecated bundles are orange, deprecated channels and
// packages say so in the title. The layout is computed here (no graphviz)
// and the output is deterministic.
func WriteSVG(w io.Writer, cfg *declcfg.DeclarativeConfig) error {
	gi, err := newGraphInput(cfg)
	if err != nil {
		return err
	}
	var panels []svgPanel
	for _, p := range gi.pkgs {
		for _, ch := range gi.sortedChannels(p) {
			title := p + " / " + ch.Name
			if gi.isDeprecated(p, declcfg.SchemaPackage, "") {
				title += " (package deprecated)"
			}
			if gi.isDeprecated(p, declcfg.SchemaChannel, ch.Name) {
				title += " (deprecated)"
			}
			panels = append(panels, layoutChannel(title, newChannelGraph(ch, gi.versions[p]), gi.versions[p],
				func(b string) bool { return gi.isDeprecated(p, declcfg.SchemaBundle, b) }))
		}
	}
	width, height := 2*svgMargin+240, svgMargin
	for _, pn := range panels {
		width = max(width, 2*svgMargin+pn.width)
		height += pn.height + svgMargin
	}
	legend := 24
	height += legend

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	y := svgMargin
	for _, pn := range panels {
		pn.write(&b, svgMargin, y)
		y += pn.height + svgMargin
	}
	// The legend.
	lx := svgMargin
	for _, l := range []struct{ kind, label string }{{"replaces", "replaces"}, {"skips", "skips"}, {"skipRange", "skipRange"}} {
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"%s marker-end="url(#arrow)"/>`+"\n", lx, y+8, lx+36, y+8, svgDash(l.kind))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+42, y+12, l.label)
		lx += 42 + svgCharWidth*len(l.label) + 24
	}
	b.WriteString("</svg>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// svgNode is a placed bundle box.
type svgNode struct {
	name, label    string
	x, y, w        int
	head, depr     bool
	outsideChannel bool
}

// svgPanel is a laid-out channel, positioned relative to its top left.
type svgPanel struct {
	title         string
	nodes         map[string]*svgNode
	order         []string
	edges         []graphEdge
	width, height int
	// top is the room above the boxes for arcs.
	top int
}

// layoutChannel assigns layers (columns) and rows to a channel's bundles.
// Entries are visited in version order, which is an upgrade order: a node's
// layer is one more than the highest layer among the bundles it upgrades
// from that are already placed (an edge against the version order, which
// validation reports, is then drawn backwards rather than looping).
func layoutChannel(title string, cg channelGraph, versions map[string]semver.Version, deprecated func(string) bool) svgPanel {
	pn := svgPanel{title: title, nodes: map[string]*svgNode{}, edges: cg.edges}
	preds := map[string][]string{}
	for _, e := range cg.edges {
		preds[e.to] = append(preds[e.to], e.from)
	}
	inChannel := map[string]bool{}
	for _, e := range cg.entries {
		inChannel[e.Name] = true
	}
	layer := map[string]int{}
	var names []string
	// Bundles outside the channel that entries upgrade from come first.
	for _, e := range cg.edges {
		if !inChannel[e.from] && !slices.Contains(names, e.from) {
			names = append(names, e.from)
			layer[e.from] = 0
		}
	}
	for _, e := range cg.entries {
		l := 0
		for _, p := range preds[e.Name] {
			if pl, ok := layer[p]; ok {
				l = max(l, pl+1)
			}
		}
		layer[e.Name] = l
		names = append(names, e.Name)
	}
	// Columns: the widest label of each layer sets its width.
	layers := 0
	for _, l := range layer {
		layers = max(layers, l+1)
	}
	colWidth := make([]int, layers)
	rows := make([]int, layers)
	for _, n := range names {
		node := &svgNode{name: n, label: n, head: n == cg.head, depr: deprecated(n), outsideChannel: !inChannel[n]}
		if v, ok := versions[n]; ok && inChannel[n] {
			node.label = n + "|" + v.String()
		}
		if node.outsideChannel {
			node.label = n + "|(not in channel)"
		}
		for _, line := range strings.Split(node.label, "|") {
			colWidth[layer[n]] = max(colWidth[layer[n]], svgMinNode, 16+svgCharWidth*len(line))
		}
		node.y = rows[layer[n]]
		rows[layer[n]]++
		pn.nodes[n] = node
		pn.order = append(pn.order, n)
	}
	x := 0
	colX := make([]int, layers)
	for l := range layers {
		colX[l] = x
		x += colWidth[l] + svgColumnGap
	}
	maxRows := 0
	for _, r := range rows {
		maxRows = max(maxRows, r)
	}
	for _, n := range pn.order {
		node := pn.nodes[n]
		node.x, node.w = colX[layer[n]], colWidth[layer[n]]
		node.y *= svgNodeHeight + svgRowGap
	}
	for _, e := range cg.edges {
		if span := layer[e.to] - layer[e.from]; span > 1 || span < 0 || e.parallel {
			pn.top = max(pn.top, min(svgArcMax, svgArcStep*max(1, abs(span))))
		}
	}
	pn.width = max(x-svgColumnGap, svgCharWidth*len(title)) + 2*svgMargin
	pn.height = svgTitle + pn.top + maxRows*(svgNodeHeight+svgRowGap) - svgRowGap + 2*svgMargin
	if maxRows == 0 {
		pn.height = svgTitle + 2*svgMargin
	}
	return pn
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func svgDash(kind string) string {
	switch kind {
	case "skips":
		return ` stroke-dasharray="6 4"`
	case "skipRange":
		return ` stroke-dasharray="2 3"`
	}
	return ""
}

// write draws the panel with its top left corner at (x0, y0).
func (pn svgPanel) write(b *strings.Builder, x0, y0 int) {
	fmt.Fprintf(b, `<g class="channel"><rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="#f7f7f7" stroke="#bbb"/>`+"\n", x0, y0, pn.width, pn.height)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0+svgMargin, y0+svgMargin+8, html.EscapeString(pn.title))
	ox, oy := x0+svgMargin, y0+svgMargin+svgTitle+pn.top
	for _, e := range pn.edges {
		from, to := pn.nodes[e.from], pn.nodes[e.to]
		x1, y1 := ox+from.x+from.w, oy+from.y+svgNodeHeight/2
		x2, y2 := ox+to.x, oy+to.y+svgNodeHeight/2
		title := e.kind
		if e.kind == "skipRange" {
			title += " " + e.skipRange
		}
		if to.x <= from.x+from.w+svgColumnGap && y1 == y2 && to.x > from.x && !e.parallel {
			// Neighbouring layers on one row: a straight arrow.
			fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"%s marker-end="url(#arrow)"><title>%s</title></line>`+"\n",
				x1, y1, x2, y2, svgDash(e.kind), html.EscapeString(title))
			continue
		}
		// Otherwise (or beside a straight arrow between the same boxes) an
		// arc from the top of one box to the top of the other, higher the
		// more layers it jumps.
		x1, y1 = ox+from.x+from.w/2, oy+from.y
		x2, y2 = ox+to.x+to.w/2, oy+to.y
		lift := min(svgArcMax, svgArcStep*max(1, abs(to.x-from.x)/(svgMinNode+svgColumnGap)))
		fmt.Fprintf(b, `<path d="M%d,%d C%d,%d %d,%d %d,%d" fill="none" stroke="#333"%s marker-end="url(#arrow)"><title>%s</title></path>`+"\n",
			x1, y1, x1, min(y1, y2)-lift, x2, min(y1, y2)-lift, x2, y2, svgDash(e.kind), html.EscapeString(title))
	}
	for _, n := range pn.order {
		node := pn.nodes[n]
		fill, stroke, width := "#fff", "#333", 1
		if node.depr {
			fill, stroke = "#f5d0a9", "#b45f06"
		}
		if node.head {
			width = 3
		}
		dash := ""
		if node.outsideChannel {
			dash = ` stroke-dasharray="4 3"`
			stroke = "#888"
		}
		fmt.Fprintf(b, `<g class="bundle"><rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s" stroke="%s" stroke-width="%d"%s/>`+"\n",
			ox+node.x, oy+node.y, node.w, svgNodeHeight, fill, stroke, width, dash)
		for i, line := range strings.Split(node.label, "|") {
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", ox+node.x+node.w/2, oy+node.y+16+i*14, html.EscapeString(line))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</g>\n")
}
