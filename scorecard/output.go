package scorecard

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// Output formats of WriteResults.
const (
	FormatText  = "text"
	FormatJSON  = "json"
	FormatXUnit = "xunit"
)

// Formats lists the output formats.
var Formats = []string{FormatText, FormatJSON, FormatXUnit}

// WriteResults writes list in format: text (one block per test, with its
// state, errors, suggestions and log, and a summary), json (the v1alpha3
// TestList) or xunit (JUnit XML, a testsuite per suite label).
func WriteResults(w io.Writer, list v1alpha3.TestList, format string) error {
	switch format {
	case FormatJSON:
		data, err := json.MarshalIndent(list, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(data))
		return err
	case FormatXUnit:
		return writeXUnit(w, list)
	case FormatText, "":
		return writeText(w, list)
	default:
		return fmt.Errorf("unknown output format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
}

func writeText(w io.Writer, list v1alpha3.TestList) error {
	var sb strings.Builder
	counts := map[v1alpha3.State]int{}
	results := 0
	for _, t := range list.Items {
		sb.WriteString(strings.Repeat("-", 80) + "\n")
		if t.Spec.Image != "" {
			fmt.Fprintf(&sb, "Image:      %s\n", t.Spec.Image)
		}
		if len(t.Spec.Entrypoint) > 0 {
			fmt.Fprintf(&sb, "Entrypoint: %s\n", strings.Join(t.Spec.Entrypoint, " "))
		}
		if len(t.Spec.Labels) > 0 {
			sb.WriteString("Labels:\n")
			for _, k := range sortedLabelKeys(t.Spec.Labels) {
				fmt.Fprintf(&sb, "\t%q:%q\n", k, t.Spec.Labels[k])
			}
		}
		if len(t.Status.Results) > 0 {
			sb.WriteString("Results:\n")
		}
		for _, r := range t.Status.Results {
			results++
			counts[r.State]++
			fmt.Fprintf(&sb, "\tName: %s\n\tState: %s\n", r.Name, r.State)
			section := func(title string, lines []string) {
				if len(lines) == 0 {
					return
				}
				fmt.Fprintf(&sb, "\t%s:\n", title)
				for _, l := range lines {
					fmt.Fprintf(&sb, "\t\t%s\n", l)
				}
			}
			section("Suggestions", r.Suggestions)
			section("Errors", r.Errors)
			if log := strings.TrimRight(r.Log, "\n"); log != "" {
				section("Log", strings.Split(log, "\n"))
			}
			sb.WriteString("\n")
		}
	}
	if results > 0 {
		fmt.Fprintf(&sb, "%d tests: %d passed, %d failed, %d could not run\n", results, counts[v1alpha3.PassState], counts[v1alpha3.FailState], counts[v1alpha3.ErrorState])
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func sortedLabelKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The JUnit XML schema as CI systems read it.
type xunitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []xunitSuite `xml:"testsuite"`
}

type xunitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []xunitCase `xml:"testcase"`
}

type xunitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *xunitProblem `xml:"failure,omitempty"`
	Error     *xunitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type xunitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeXUnit(w io.Writer, list v1alpha3.TestList) error {
	var out xunitSuites
	index := map[string]int{}
	for _, t := range list.Items {
		suite := t.Spec.Labels[labelSuite]
		if suite == "" {
			suite = "scorecard"
		}
		i, ok := index[suite]
		if !ok {
			i = len(out.Suites)
			index[suite] = i
			out.Suites = append(out.Suites, xunitSuite{Name: suite})
		}
		s := &out.Suites[i]
		for _, r := range t.Status.Results {
			c := xunitCase{Name: r.Name, ClassName: suite, SystemOut: r.Log}
			problem := &xunitProblem{Message: strings.Join(r.Errors, "; "), Text: strings.Join(slices.Concat(r.Errors, prefixed("suggestion: ", r.Suggestions)), "\n")}
			switch r.State {
			case v1alpha3.FailState:
				c.Failure = problem
				s.Failures++
			case v1alpha3.ErrorState:
				c.Error = problem
				s.Errors++
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func prefixed(p string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = p + l
	}
	return out
}

// WriteResultsFile writes list as JSON (the v1alpha3 TestList that bundle
// generation reads as evidence) to path, atomically.
func WriteResultsFile(path string, list v1alpha3.TestList) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(list); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}

// Summary names the tests that failed and those that could not run, in
// order ("failed: a, b; could not run: c"); empty when all passed.
func Summary(list v1alpha3.TestList) string {
	var failed, errored []string
	for _, t := range list.Items {
		for _, r := range t.Status.Results {
			switch r.State {
			case v1alpha3.FailState:
				failed = append(failed, r.Name)
			case v1alpha3.ErrorState:
				errored = append(errored, r.Name)
			}
		}
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "failed: "+strings.Join(failed, ", "))
	}
	if len(errored) > 0 {
		parts = append(parts, "could not run: "+strings.Join(errored, ", "))
	}
	return strings.Join(parts, "; ")
}
