package crdschema

import (
	"regexp"
	"strings"
)

// output keeps the last lines of a template's text as it is walked, to
// tell the YAML field an action's output lands in.
type output struct {
	lines []string // complete lines, the last maxContext
	cur   string   // the line being written
}

// maxContext is how many lines back the enclosing field is looked for.
const maxContext = 40

func (o *output) write(text string) {
	parts := strings.Split(text, "\n")
	if len(parts) == 1 {
		o.cur += text
		return
	}
	o.lines = append(o.lines, o.cur+parts[0])
	o.lines = append(o.lines, parts[1:len(parts)-1]...)
	o.cur = parts[len(parts)-1]
	if len(o.lines) > maxContext {
		o.lines = o.lines[len(o.lines)-maxContext:]
	}
}

// keyLine is a YAML line opening a field: indentation, an optional list
// dash, the key and a colon, what follows it.
var keyLine = regexp.MustCompile(`^(\s*)(-\s+)?([A-Za-z0-9_./-]+):(.*)$`)

// field is the key the text written next is the value of ("port" in
// "  - port: ") and the key of the map holding it, "" when the current
// line is not a key and its colon alone.
func (o *output) field() (key, parent string) {
	m := keyLine.FindStringSubmatch(o.cur)
	if m == nil || strings.TrimSpace(m[4]) != "" {
		return "", ""
	}
	key, indent := m[3], len(m[1])+len(m[2])
	for i := len(o.lines) - 1; i >= 0; i-- {
		l := o.lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		p := keyLine.FindStringSubmatch(l)
		if p == nil {
			if len(l)-len(strings.TrimLeft(l, " ")) < indent {
				return key, "" // something else encloses it
			}
			continue
		}
		if len(p[1])+len(p[2]) < indent {
			if strings.TrimSpace(p[4]) != "" {
				return key, "" // a field with a value holds no map
			}
			return key, p[3]
		}
	}
	return key, ""
}

// landingUse is what landing in field key of a map under parent says of a
// value, in the Kubernetes API's own fields: int-or-string ones, ports,
// resource quantities.
func landingUse(key, parent string) Use {
	switch {
	case key == "":
		return 0
	case intOrStringFields[key]:
		return UseIntOrString
	case key == "port" && (parent == "httpGet" || parent == "tcpSocket"):
		return UseIntOrString
	case key == "port":
		return UsePort
	case parent == "requests" || parent == "limits" || quantityFields[key]:
		return UseQuantity
	}
	return 0
}

// intOrStringFields are the fields of Kubernetes objects that are
// int-or-string wherever they appear.
var intOrStringFields = map[string]bool{"targetPort": true, "minAvailable": true, "maxUnavailable": true, "maxSurge": true}

// quantityFields are resource quantities wherever they appear.
var quantityFields = map[string]bool{"cpu": true, "memory": true, "ephemeral-storage": true}
