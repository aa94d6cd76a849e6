package olm

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Report is the status of one package's install, for printing.
type Report struct {
	Package   string `json:"package"`
	Namespace string `json:"namespace"`
	// Installed is true when the CSV reached Succeeded.
	Installed     bool              `json:"installed"`
	CatalogSource *CatalogSourceRow `json:"catalogSource,omitempty"`
	Subscription  *SubscriptionRow  `json:"subscription,omitempty"`
	InstallPlan   *InstallPlanRow   `json:"installPlan,omitempty"`
	CSV           *CSVRow           `json:"csv,omitempty"`
	// Findings are Diagnose's, in the order OLM works.
	Findings []Finding `json:"findings"`
}

// CatalogSourceRow is a CatalogSource's address and connection state.
type CatalogSourceRow struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
	Image   string `json:"image,omitempty"`
	State   string `json:"state,omitempty"`
}

// SubscriptionRow is a Subscription's spec and state.
type SubscriptionRow struct {
	Name         string            `json:"name"`
	Channel      string            `json:"channel,omitempty"`
	Approval     string            `json:"approval,omitempty"`
	State        string            `json:"state,omitempty"`
	CurrentCSV   string            `json:"currentCSV,omitempty"`
	InstalledCSV string            `json:"installedCSV,omitempty"`
	Conditions   map[string]string `json:"conditions,omitempty"`
}

// InstallPlanRow is an InstallPlan's phase.
type InstallPlanRow struct {
	Name     string   `json:"name"`
	Phase    string   `json:"phase,omitempty"`
	Approved bool     `json:"approved"`
	CSVs     []string `json:"csvs,omitempty"`
}

// CSVRow is a ClusterServiceVersion's phase and reason.
type CSVRow struct {
	Name    string `json:"name"`
	Phase   string `json:"phase,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Report summarizes o with Diagnose's findings.
func (o *Observed) Report() *Report {
	r := &Report{Package: o.Package, Namespace: o.Namespace, Installed: o.Installed(), Findings: Diagnose(o)}
	if cs := o.CatalogSource; cs != nil {
		r.CatalogSource = &CatalogSourceRow{Name: cs.Name, Address: cs.Spec.Address, Image: cs.Spec.Image}
		if cs.Status.GRPCConnectionState != nil {
			r.CatalogSource.State = cs.Status.GRPCConnectionState.LastObservedState
		}
	}
	if s := o.Subscription; s != nil {
		r.Subscription = &SubscriptionRow{Name: s.Name, Channel: s.Spec.Channel, Approval: string(s.Spec.InstallPlanApproval),
			State: string(s.Status.State), CurrentCSV: s.Status.CurrentCSV, InstalledCSV: s.Status.InstalledCSV}
		for _, c := range s.Status.Conditions {
			if r.Subscription.Conditions == nil {
				r.Subscription.Conditions = map[string]string{}
			}
			r.Subscription.Conditions[string(c.Type)] = string(c.Status)
		}
	}
	if ip := o.InstallPlan; ip != nil {
		r.InstallPlan = &InstallPlanRow{Name: ip.Name, Phase: string(ip.Status.Phase), Approved: ip.Spec.Approved, CSVs: ip.Spec.ClusterServiceVersionNames}
	}
	if csv := o.CSV; csv != nil {
		r.CSV = &CSVRow{Name: csv.Name, Phase: string(csv.Status.Phase), Reason: string(csv.Status.Reason), Message: csv.Status.Message}
	}
	return r
}

// Summary is one line saying where the install stands, for progress output.
func (r *Report) Summary() string {
	var parts []string
	if r.CatalogSource != nil {
		parts = append(parts, "catalog "+cmp.Or(r.CatalogSource.State, "?"))
	}
	if r.Subscription != nil {
		parts = append(parts, "subscription "+cmp.Or(r.Subscription.State, "?"))
	} else {
		parts = append(parts, "no subscription")
	}
	if r.InstallPlan != nil {
		parts = append(parts, "installplan "+r.InstallPlan.Name+" "+cmp.Or(r.InstallPlan.Phase, "?"))
	}
	if r.CSV != nil {
		parts = append(parts, "csv "+r.CSV.Name+" "+cmp.Or(r.CSV.Phase, "?"))
		if r.CSV.Reason != "" {
			parts[len(parts)-1] += " (" + r.CSV.Reason + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// Stuck are the findings that are not passes.
func (r *Report) Stuck() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity != Pass {
			out = append(out, f)
		}
	}
	return out
}

// WriteText prints the report as a table of findings with their fixes.
func (r *Report) WriteText(w io.Writer) error {
	state := "not installed"
	if r.Installed {
		state = "installed (" + r.CSV.Name + ")"
	}
	fmt.Fprintf(w, "package %s in namespace %s: %s\n", r.Package, r.Namespace, state)
	return WriteFindings(w, r.Findings)
}

// WriteFindings prints findings one a line, each non-pass with its fix.
func WriteFindings(w io.Writer, findings []Finding) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range findings {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Severity, f.Check, cmp.Or(f.Object, "-"), f.Message)
		if f.Fix != "" && f.Severity != Pass {
			fmt.Fprintf(tw, "  \t\t\tfix: %s\n", f.Fix)
		}
	}
	return tw.Flush()
}
