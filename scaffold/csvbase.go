package scaffold

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
)

// DescriptionAnnotation is the CSV annotation with the operator's short
// description (OperatorHub's card); spec.description is the long one.
const DescriptionAnnotation = "description"

// iconMediaTypes are the icon media types OLM accepts, by file extension.
var iconMediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".svg": "image/svg+xml",
}

// ChartCSVMetadata is what a chart says about itself that a CSV says too.
type ChartCSVMetadata struct {
	// Description is Chart.yaml's description: the short description.
	Description string
	// LongDescription is the description followed by the README's opening
	// paragraphs (markdown).
	LongDescription string
	Keywords        []string
	Maintainers     []v1alpha1.Maintainer
	// Links are Chart.yaml's home and sources.
	Links []v1alpha1.AppLink
	// Icon is the chart's icon when the chart ships it (a data: URL or a
	// file in the chart); nil otherwise.
	Icon *v1alpha1.Icon
	// Warnings say what could not be used (an icon that is a web URL...).
	Warnings []string
}

// CSVMetadataOf reads a chart's description, README, keywords, maintainers,
// links and icon for its operator's CSV.
func CSVMetadataOf(c *chart.Chart) ChartCSVMetadata {
	md := c.Helm.Metadata
	out := ChartCSVMetadata{Description: oneLine(md.Description)}
	for _, k := range md.Keywords {
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(out.Keywords, k) {
			out.Keywords = append(out.Keywords, k)
		}
	}
	for _, m := range md.Maintainers {
		if m != nil && (m.Name != "" || m.Email != "") {
			out.Maintainers = append(out.Maintainers, v1alpha1.Maintainer{Name: m.Name, Email: m.Email})
		}
	}
	if md.Home != "" {
		out.Links = append(out.Links, v1alpha1.AppLink{Name: "Home", URL: md.Home})
	}
	for i, s := range md.Sources {
		name := "Source"
		if len(md.Sources) > 1 {
			name = fmt.Sprintf("Source %d", i+1)
		}
		out.Links = append(out.Links, v1alpha1.AppLink{Name: name, URL: s})
	}
	readme := readmeOpening(readmeOf(c))
	switch {
	case readme == "":
		out.LongDescription = out.Description
	case out.Description == "" || strings.HasPrefix(oneLine(readme), out.Description):
		out.LongDescription = readme
	default:
		out.LongDescription = out.Description + "\n\n" + readme
	}
	icon, warning := chartIcon(c)
	out.Icon = icon
	if warning != "" {
		out.Warnings = append(out.Warnings, warning)
	}
	return out
}

// oneLine joins a text's lines and spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readmeOf is the chart's README.md, if it ships one.
func readmeOf(c *chart.Chart) string {
	for _, f := range c.Helm.Files {
		if strings.EqualFold(f.Name, "README.md") {
			return string(f.Data)
		}
	}
	return ""
}

// Bounds of the README's opening: paragraphs are taken until one of these
// is reached (one paragraph at least, cut at a sentence if too long).
const (
	openingChars      = 600
	openingParagraphs = 3
	paragraphChars    = 1500
)

var (
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	// badgeLine is a line of images and links only: badges.
	badgeLine = regexp.MustCompile(`^(\s*\[?!\[[^\]]*\]\([^)]*\)(\]\([^)]*\))?\s*)+$`)
)

// readmeOpening is the README's opening: its first paragraphs of text,
// after the title and badges, before the first heading, code block, table
// or HTML.
func readmeOpening(readme string) string {
	readme = htmlComment.ReplaceAllString(strings.ReplaceAll(readme, "\r\n", "\n"), "")
	var paras []string
	var cur []string
	total := 0
	flush := func() bool {
		if len(cur) == 0 {
			return true
		}
		p := strings.Join(cur, "\n")
		cur = nil
		if len(p) > paragraphChars {
			p = cutAtSentence(p, paragraphChars)
		}
		paras = append(paras, p)
		total += len(p)
		return total < openingChars && len(paras) < openingParagraphs
	}
	for _, line := range strings.Split(readme, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "#"), strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "|"),
			strings.HasPrefix(trimmed, "<") && !strings.HasPrefix(trimmed, "<http"), strings.HasPrefix(trimmed, "---"):
			if len(paras) > 0 || len(cur) > 0 {
				flush()
				return strings.Join(paras, "\n\n")
			}
		case trimmed == "":
			if !flush() {
				return strings.Join(paras, "\n\n")
			}
		case len(paras) == 0 && len(cur) == 0 && badgeLine.MatchString(trimmed):
			// Badges before the text.
		default:
			cur = append(cur, strings.TrimRight(line, " \t"))
		}
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// cutAtSentence shortens p to at most max bytes, at the end of a sentence
// when there is one, else at a space, and marks the cut.
func cutAtSentence(p string, max int) string {
	head := p[:max]
	if i := strings.LastIndex(head, ". "); i > max/2 {
		return head[:i+1]
	}
	if i := strings.LastIndexAny(head, " \n"); i > 0 {
		head = head[:i]
	}
	return head + " …"
}

// chartIcon is the chart's icon as a CSV icon: a data: URL decoded, a file
// of the chart read; a web URL cannot be fetched offline and is named in
// the warning.
func chartIcon(c *chart.Chart) (*v1alpha1.Icon, string) {
	icon := strings.TrimSpace(c.Helm.Metadata.Icon)
	where := fmt.Sprintf("chart %s: Chart.yaml icon", c.Name())
	switch {
	case icon == "":
		return nil, ""
	case strings.HasPrefix(icon, "data:"):
		i, err := dataURLIcon(icon)
		if err != nil {
			return nil, fmt.Sprintf("%s: %v; the CSV has no icon (set spec.icon in the base CSV)", where, err)
		}
		return i, ""
	case strings.HasPrefix(icon, "http://"), strings.HasPrefix(icon, "https://"):
		return nil, fmt.Sprintf("%s %s is a web address, which chartpilot does not fetch (it works offline): the CSV has no icon; put the image in the chart and name the file in icon, or set spec.icon (base64data, mediatype) in the base CSV", where, icon)
	}
	file := path.Clean(strings.TrimPrefix(strings.TrimPrefix(icon, "file://"), "./"))
	mediaType, ok := iconMediaTypes[strings.ToLower(path.Ext(file))]
	if !ok {
		return nil, fmt.Sprintf("%s %s: not a PNG, JPEG, GIF or SVG file name, the image types a CSV icon may have; the CSV has no icon", where, icon)
	}
	for _, f := range c.Helm.Files {
		if f.Name == file {
			return &v1alpha1.Icon{Data: base64.StdEncoding.EncodeToString(f.Data), MediaType: mediaType}, ""
		}
	}
	return nil, fmt.Sprintf("%s %s: no such file in the chart; the CSV has no icon", where, icon)
}

// dataURLIcon decodes a data: URL (RFC 2397) into an icon.
func dataURLIcon(u string) (*v1alpha1.Icon, error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok {
		return nil, fmt.Errorf("the data: URL has no comma before its data")
	}
	params := strings.Split(meta, ";")
	mediaType := strings.ToLower(strings.TrimSpace(params[0]))
	if !slices.Contains([]string{"image/png", "image/jpeg", "image/gif", "image/svg+xml"}, mediaType) {
		return nil, fmt.Errorf("media type %q is not one a CSV icon may have (image/png, image/jpeg, image/gif, image/svg+xml)", mediaType)
	}
	var raw []byte
	if params[len(params)-1] == "base64" {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(strings.TrimSpace(data)); err != nil {
			return nil, fmt.Errorf("the data: URL's base64 data: %w", err)
		}
	} else {
		s, err := url.PathUnescape(data)
		if err != nil {
			return nil, fmt.Errorf("the data: URL's data: %w", err)
		}
		raw = []byte(s)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("the data: URL holds no data")
	}
	return &v1alpha1.Icon{Data: base64.StdEncoding.EncodeToString(raw), MediaType: mediaType}, nil
}

// BaseCSVFile is where a project's base CSV is.
func BaseCSVFile(projectName string) string {
	return "config/manifests/bases/" + projectName + ".clusterserviceversion.yaml"
}

// BaseCSV is a new base CSV for the project in dir, as init writes it,
// and warnings about what of its first chart could not be used.
func BaseCSV(dir string) ([]byte, []string, error) {
	g, err := openProject(dir, "", nil, io.Discard)
	if err != nil {
		return nil, nil, err
	}
	if len(g.watches) == 0 {
		return nil, nil, fmt.Errorf("%s lists no chart", WatchesFile)
	}
	c, err := chart.Load(filepath.Join(dir, g.watches[0].Chart))
	if err != nil {
		return nil, nil, err
	}
	return g.baseCSV(c)
}

// baseCSV is the project's base CSV (config/manifests/bases), written by
// init: what the author edits, filled from what the first chart says about
// itself. make bundle keeps it and adds what it generates.
func (g *generator) baseCSV(c *chart.Chart) ([]byte, []string, error) {
	d := g.data()
	md := CSVMetadataOf(c)
	short := md.Description
	if short == "" {
		short = d.Description
	}
	var owned []v1alpha1.CRDDescription
	for _, r := range d.Resources {
		owned = append(owned, v1alpha1.CRDDescription{Name: r.Plural + "." + r.Group, Version: r.Version, Kind: r.Kind,
			DisplayName: r.Kind, Description: r.Kind + " is an instance of the " + r.Chart + " Helm chart."})
	}
	icon := v1alpha1.Icon{} // a placeholder for the author; the bundle drops it while empty
	if md.Icon != nil {
		icon = *md.Icon
	}
	keywords := md.Keywords
	if len(keywords) == 0 {
		keywords = []string{c.Name()}
	}
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.ClusterServiceVersionAPIVersion, Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{Name: g.project.ProjectName + ".v0.0.0", Namespace: "placeholder",
			Annotations: map[string]string{"alm-examples": "[]", "capabilities": "Basic Install", DescriptionAnnotation: short}},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: owned},
			Description: strings.TrimSpace(strings.Join([]string{md.LongDescription,
				fmt.Sprintf("Each %s custom resource is a release of the Helm chart %s, its spec the chart's values: the operator installs, upgrades and repairs it.", kindList(d.Resources), c.Name())}, "\n\n")),
			DisplayName: g.project.ProjectName,
			Icon:        []v1alpha1.Icon{icon},
			InstallModes: []v1alpha1.InstallMode{
				{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			Keywords:    keywords,
			Links:       md.Links,
			Maintainers: md.Maintainers,
			Maturity:    "alpha",
			Provider:    v1alpha1.AppLink{Name: g.project.Domain},
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, nil, fmt.Errorf("base CSV: %w", err)
	}
	delete(obj, "status")
	delete(obj["spec"].(map[string]any), "cleanup") // OLM's default, not the author's to write
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("base CSV: %w", err)
	}
	return bytes.Replace(out, []byte("  creationTimestamp: null\n"), nil, 1), md.Warnings, nil
}

// kindList names the kinds: "Hello", "A or B".
func kindList(rs []resourceData) string {
	var kinds []string
	for _, r := range rs {
		kinds = append(kinds, r.Kind)
	}
	return strings.Join(kinds, " or ")
}
