package bundle

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/chartpilot/chartpilot/chart"
)

// FoundImage is an image a chart's operand may run, as a render of the
// chart names it; it becomes a relatedImages entry so that mirrors for
// disconnected clusters know it.
type FoundImage struct {
	// Image is the reference as the chart writes it.
	Image string `json:"image"`
	// Name is the relatedImages name proposed for it (made unique when
	// added): the container's, the flag's, variable's or field's that
	// names it, else the repository's last element.
	Name string `json:"name"`
	// Where lists each place it was found, in render order.
	Where []ImageSource `json:"where"`
}

// ImageSource is where an image was found.
type ImageSource struct {
	// Template is the chart file, e.g. "webapp/templates/deployment.yaml".
	Template string `json:"template"`
	// Object is the object's kind and name, e.g. "Deployment/rel-webapp".
	Object string `json:"object"`
	// Field is the path in the object, e.g.
	// "spec.template.spec.containers[0].args[2]" or `data["config.yaml"]`.
	Field string `json:"field"`
}

func (s ImageSource) String() string {
	return s.Template + ": " + s.Object + " " + s.Field
}

// operandImages finds every image reference in the renders: the images of
// pod specs, and, recognised conservatively (see imageRef), images passed
// in container args and commands, environment variables, ConfigMap data
// and the fields of any object the chart creates (a CatalogSource's image,
// a CR's). The renders are RBAC derivation's (default values, samples,
// value gates on), so that an image behind a gate is listed as surely as
// the permission to run it is granted. `helm test` hooks are left out (the
// operator never runs them), and so are CRDs (their schemas only describe
// images).
func operandImages(renders []*chart.Rendered) []FoundImage {
	var out []FoundImage
	index := map[string]int{}
	add := func(image, suggested string, src ImageSource) {
		i, ok := index[image]
		if !ok {
			i = len(out)
			index[image] = i
			out = append(out, FoundImage{Image: image, Name: relatedName(suggested, image)})
		}
		if !slices.Contains(out[i].Where, src) {
			out[i].Where = append(out[i].Where, src)
		}
	}
	for _, r := range renders {
		for _, m := range r.Objects {
			if isTestHook(m.Hook) || m.Object.GetKind() == kindCRD {
				continue
			}
			obj := m.Object.GetKind() + "/" + m.Object.GetName()
			s := &imageScan{found: func(image, suggested, field string) {
				add(image, suggested, ImageSource{Template: m.Source, Object: obj, Field: field})
			}}
			s.walk(m.Object.Object, nil, "")
		}
	}
	return out
}

// mergeImages adds the images of more (another chart's) to images.
func mergeImages(images, more []FoundImage) []FoundImage {
	for _, m := range more {
		i := slices.IndexFunc(images, func(f FoundImage) bool { return f.Image == m.Image })
		if i < 0 {
			images = append(images, m)
			continue
		}
		for _, w := range m.Where {
			if !slices.Contains(images[i].Where, w) {
				images[i].Where = append(images[i].Where, w)
			}
		}
	}
	return images
}

// imageScan walks an object for image references.
type imageScan struct {
	found func(image, suggested, field string)
}

// walk scans v at path; hint is what names v (its key, the flag or the
// variable before it), which makes an image of a weaker reference.
func (s *imageScan) walk(v any, path []string, hint string) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// An environment variable (and any {name, value} pair): the name
		// says what the value is.
		envName, _ := v["name"].(string)
		_, hasValue := v["value"].(string)
		container := len(path) >= 2 && slices.Contains(containerFields, path[len(path)-2])
		for _, k := range keys {
			h := k
			switch {
			case k == "value" && hasValue && envName != "":
				h = envName
			case k == "image" && container:
				h = envName // the container's name
			}
			s.walk(v[k], append(path, pathKey(k)), h)
		}
	case []any:
		prev := ""
		for i, e := range v {
			// In args, "--image" names the element after it.
			h := hint
			if imageHint(prev) {
				h = prev
			}
			s.walk(e, append(path, "["+strconv.Itoa(i)+"]"), h)
			prev, _ = e.(string)
		}
	case string:
		s.scanString(v, path, hint)
	}
}

// containerFields hold containers: their "image" is an image whatever it
// looks like.
var containerFields = []string{".containers", ".initContainers", ".ephemeralContainers"}

func (s *imageScan) scanString(v string, path []string, hint string) {
	field := strings.TrimPrefix(strings.Join(path, ""), ".")
	n := len(path)
	if n >= 3 && path[n-1] == ".image" && slices.Contains(containerFields, path[n-3]) {
		if v = strings.TrimSpace(v); v != "" && !strings.ContainsFunc(v, unicode.IsSpace) {
			s.found(v, hint, field)
		}
		return
	}
	prev := hint
	for _, tok := range tokens(v) {
		if ref, ok := imageRef(tok, imageHint(prev)); ok {
			suggested := ""
			if imageHint(prev) {
				suggested = prev
			}
			s.found(ref, suggested, field)
		}
		prev = tok
	}
}

// pathKey is a map key as a path element: .key, or ["key"] when the key
// has characters a dotted path would misread.
func pathKey(k string) string {
	if simpleKey.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

var simpleKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// tokens splits a string into the words an image reference may be: on
// white space, quotes, brackets and separators; "=" too, so that
// "--image=REF" gives "--image" then "REF".
func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("\"'`,;()[]{}<>|=", r)
	})
}

// imageHint says whether a key, flag or variable name says its value is an
// image: it mentions "image" and not its pull policy or secrets.
func imageHint(h string) bool {
	h = strings.ToLower(strings.Trim(h, "-:\"' "))
	return strings.Contains(h, "image") && !strings.Contains(h, "pull") && !strings.Contains(h, "policy") && !strings.Contains(h, "secret")
}

// imageRef says whether tok is an image reference, conservatively: it must
// parse as one and not be a URL or a path. Named as an image (hinted), it
// needs a tag, a digest or a registry-like host; otherwise a digest, or a
// tag that is not a port number and a repository path ("org/app:1.2",
// "quay.io/org/app:v1"): "nginx:1.25" alone is too much like "host:port"
// to be taken for an image without a hint.
func imageRef(tok string, hinted bool) (string, bool) {
	tok = strings.TrimRight(tok, ".:")
	if len(tok) < 3 || len(tok) > 512 || strings.Contains(tok, "://") || strings.Contains(tok, "..") ||
		strings.ContainsAny(tok[:1], "/.~-$%*+") || strings.ContainsFunc(tok, unicode.IsSpace) {
		return "", false
	}
	if _, err := name.ParseReference(tok, name.WeakValidation); err != nil {
		return "", false
	}
	repo, digested := tok, false
	if i := strings.Index(tok, "@"); i >= 0 {
		repo, digested = tok[:i], true
	}
	slash := strings.LastIndex(repo, "/")
	tag := ""
	if i := strings.LastIndex(repo, ":"); i > slash {
		tag = repo[i+1:]
	}
	host := ""
	if first, _, ok := strings.Cut(repo, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		host = first
	}
	switch {
	case digested:
		return tok, true
	case hinted:
		return tok, tag != "" || host != ""
	default:
		return tok, tag != "" && slash >= 0 && !allDigits(tag)
	}
}

func allDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// relatedName makes a relatedImages name from what named the image (a
// flag, variable or key; "" for none) or, when that is generic, the
// image's repository: lower-case letters, digits and dashes.
func relatedName(suggested, image string) string {
	s := strings.TrimLeft(suggested, "-")
	s, _ = strings.CutPrefix(s, "RELATED_IMAGE_")
	s = kebab(s)
	if s == "" || s == "image" || s == "images" {
		repo := image
		if i := strings.Index(repo, "@"); i >= 0 {
			repo = repo[:i]
		}
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
		s = kebab(repo[strings.LastIndex(repo, "/")+1:])
	}
	return s
}

// kebab turns "configmapServerImage" or "ACME_SOLVER_IMAGE" into
// "configmap-server-image", "acme-solver-image".
func kebab(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLower(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = true
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
			prevLower = false
		}
	}
	return strings.Trim(b.String(), "-")
}

// isTestHook says whether a hook annotation's value (a comma-separated list)
// makes the object a `helm test` hook.
func isTestHook(hook string) bool {
	for _, h := range strings.Split(hook, ",") {
		switch strings.TrimSpace(h) {
		case "test", "test-success", "test-failure":
			return true
		}
	}
	return false
}

// String says what the image is and where it was first found, and how
// many other places name it.
func (f FoundImage) String() string {
	line := f.Image
	if len(f.Where) > 0 {
		line += " (" + f.Where[0].String()
		if more := len(f.Where) - 1; more > 0 {
			line += fmt.Sprintf("; %d more", more)
		}
		line += ")"
	}
	return line
}
