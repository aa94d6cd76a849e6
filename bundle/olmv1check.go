package bundle

import (
	"fmt"
	"io"
	"os"

	"github.com/chartpilot/chartpilot/bundle/olmv1"
)

// FindingTypeOLMv1 is the Finding.Type of what keeps OLM v1 from installing
// the bundle, or makes it install it otherwise than OLM v0 (olmv1.Check).
const FindingTypeOLMv1 = "OLMv1"

// OLMv1Verdict says whether OLM v1 installs the bundle.
type OLMv1Verdict struct {
	// Version is the operator-controller release checked against.
	Version string `json:"version"`
	// Installs is false when operator-controller refuses the bundle; the
	// findings of type OLMv1 say why and what to do.
	Installs bool `json:"installs"`
}

// WriteText prints the verdict in a line.
func (v *OLMv1Verdict) WriteText(w io.Writer) error {
	verdict := "installs the bundle (AllNamespaces mode)"
	if !v.Installs {
		verdict = "refuses the bundle: see the OLMv1 findings"
	}
	_, err := fmt.Fprintf(w, "OLM v1 (operator-controller %s) %s\n", v.Version, verdict)
	return err
}

// checkOLMv1 checks the bundle as operator-controller reads it. Its refusals
// are errors when strict, warnings otherwise (OLM v0 installs the bundle).
func checkOLMv1(dir string, strict bool) (*OLMv1Verdict, []Finding) {
	v := &OLMv1Verdict{Version: olmv1.OperatorControllerVersion, Installs: true}
	level := levelWarning
	if strict {
		level = levelError
	}
	b, err := olmv1.Load(os.DirFS(dir))
	if err != nil {
		v.Installs = false
		return v, []Finding{{Level: level, File: ".", Type: FindingTypeOLMv1, Message: fmt.Sprintf("OLM v1 cannot read the bundle: %v", err)}}
	}
	var out []Finding
	for _, p := range olmv1.Check(b) {
		f := Finding{Level: levelWarning, File: p.File, Field: p.Field, Object: p.Object, Type: FindingTypeOLMv1,
			Message: fmt.Sprintf("OLM v1 (operator-controller %s): %s; fix: %s", v.Version, p.Message, p.Fix)}
		if p.Level == olmv1.LevelError {
			v.Installs = false
			f.Level = level
			f.Message = fmt.Sprintf("OLM v1 (operator-controller %s) refuses to install the bundle: %s; fix: %s", v.Version, p.Message, p.Fix)
		}
		out = append(out, f)
	}
	return v, out
}
