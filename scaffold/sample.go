package scaffold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// sampleCR is a CR whose spec is the chart's values.yaml, comments kept,
// as operator-sdk writes it, with the values given to init (c.Values)
// merged over it. What it writes is read back the way kubectl and Helm
// read YAML and must give that spec exactly; values.yaml's text is kept
// when it can be (indented under spec), else its parsed form with its
// comments, else the spec alone.
func sampleCR(c *chart.Chart, rd resourceData) ([]byte, error) {
	head := fmt.Sprintf("apiVersion: %s/%s\nkind: %s\nmetadata:\n  name: %s-sample\n", rd.Group, rd.Version, rd.Kind, rd.Lower)
	var values []byte
	for _, f := range c.Helm.Raw {
		if f.Name == chartutil.ValuesfileName {
			values = f.Data
		}
	}
	want := chart.MergeValues(copyMap(c.Helm.Values), copyMap(c.Values))
	if len(want) == 0 {
		return []byte(head + "spec: {}\n"), nil
	}
	from := "# Default values copied from <project_dir>/helm-charts/" + c.Name() + "/values.yaml"
	if len(c.Values) > 0 {
		from += ",\n  # with the values given to chartpilot (" + ValuesDir + "/) merged over them"
	}
	var tries [][]byte
	if len(c.Values) == 0 {
		if spec, ok := indentedText(values); ok {
			tries = append(tries, []byte(head+"spec:\n  "+from+"\n"+spec))
		}
	}
	if spec, err := reencoded(values, c.Values); err == nil {
		tries = append(tries, []byte(head+"spec:\n  "+from+"\n"+spec))
	}
	for _, out := range tries {
		if specOf(out, want) {
			return out, nil
		}
	}
	// Without values.yaml's comments: its YAML could not be kept as is.
	plain, err := sigsyaml.Marshal(map[string]any{"spec": want})
	if err != nil {
		return nil, fmt.Errorf("sample of %s: %w", rd.Kind, err)
	}
	out := []byte(head + string(plain))
	if !specOf(out, want) {
		return nil, fmt.Errorf("sample of %s: its spec does not read back as the chart's values", rd.Kind)
	}
	return out, nil
}

// indentedText is values.yaml's first document (Helm reads no other)
// indented under spec, without document markers and directives; false when
// its first document does not start a map on its own line.
func indentedText(values []byte) (string, bool) {
	values = bytes.TrimPrefix(values, []byte("\xef\xbb\xbf"))
	var b strings.Builder
	started := false
	for _, line := range strings.Split(strings.TrimRight(string(values), "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		marker := strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...")
		switch {
		case !started && strings.HasPrefix(line, "%"):
			continue // a directive
		case marker && !started:
			if rest := strings.TrimSpace(line[3:]); rest != "" && !strings.HasPrefix(rest, "#") {
				return "", false // content on the marker's line
			}
			started = true
			continue
		case marker && (len(line) == 3 || line[3] == ' ' || line[3] == '\t'):
			return b.String(), true // the next document, or the end of this one
		}
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			started = true
		}
		if trimmed == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + line + "\n")
	}
	return b.String(), true
}

// reencoded is values.yaml parsed, given merged over it and written again
// under spec, with its comments.
func reencoded(values []byte, given map[string]any) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return "", err
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		root = doc.Content[0]
		// The file's opening comment is the document's.
		root.HeadComment = strings.TrimSpace(doc.HeadComment + "\n\n" + root.HeadComment)
	}
	asHelmReads(root)
	if err := mergeNode(root, given); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if line == "" {
			out.WriteString("\n")
			continue
		}
		out.WriteString("  " + line + "\n")
	}
	return out.String(), nil
}

// asHelmReads rewrites the plain scalars below n that YAML 1.2 (this
// encoder) and YAML 1.1 (Helm's reader: yes, on, 0777, 1_000...) read
// differently, as the value Helm reads, so that writing them again keeps
// their meaning.
func asHelmReads(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style == 0 {
		var helm, v3 any
		if sigsyaml.Unmarshal([]byte(n.Value), &helm) != nil || n.Decode(&v3) != nil {
			return
		}
		if !sameJSON(helm, v3) {
			var fixed yaml.Node
			if fixed.Encode(helm) == nil {
				fixed.HeadComment, fixed.LineComment, fixed.FootComment = n.HeadComment, n.LineComment, n.FootComment
				fixed.Anchor = n.Anchor
				*n = fixed
			}
		}
		return
	}
	for _, c := range n.Content {
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode || n.Kind == yaml.DocumentNode {
			asHelmReads(c)
		}
	}
}

// mergeNode merges values over the map node m as chart.MergeValues does:
// maps key by key, anything else replaced.
func mergeNode(m *yaml.Node, values map[string]any) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := values[k]
		var at *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == k && m.Content[i].Kind == yaml.ScalarNode {
				at = m.Content[i+1] // the last one wins, as in Helm's reading
			}
		}
		if sub, ok := v.(map[string]any); ok && at != nil {
			if at.Kind == yaml.AliasNode && at.Alias.Kind == yaml.MappingNode {
				// Change a copy: the anchor's other aliases keep its values.
				*at = *deepCopyNode(at.Alias)
				at.Anchor = ""
			}
			if at.Kind == yaml.MappingNode {
				if err := mergeNode(at, sub); err != nil {
					return err
				}
				continue
			}
		}
		var nv yaml.Node
		if err := nv.Encode(v); err != nil {
			return fmt.Errorf("value %s: %w", k, err)
		}
		if at != nil {
			nv.LineComment = at.LineComment
			*at = nv
			continue
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, &nv)
	}
	return nil
}

func deepCopyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		c.Content[i] = deepCopyNode(e)
	}
	return &c
}

// specOf tells whether the sample reads back, as kubectl reads YAML, with
// want as its spec.
func specOf(sample []byte, want map[string]any) bool {
	var obj struct {
		Spec map[string]any `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(sample, &obj); err != nil {
		return false
	}
	return sameJSON(obj.Spec, want)
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// copyMap deep-copies a values tree.
func copyMap(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	out := make(map[string]any, len(v))
	for k, e := range v {
		out[k] = copyAny(e)
	}
	return out
}

func copyAny(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyAny(e)
		}
		return out
	}
	return v
}
