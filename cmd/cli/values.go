package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/rbac"

	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
)

// valuesFlags adds Helm's flags for values (--values/-f, --set,
// --set-string), read with Helm's own parser.
func valuesFlags(cmd *cobra.Command, o *values.Options) {
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.ValueFiles, "values", "f", nil, "a values file for the chart, as helm install -f takes it (repeatable; later files win); recorded under helm-values/ for generate")
	fl.StringArrayVar(&o.Values, "set", nil, "a value for the chart, as helm install --set takes it: key=value, a.b=c, list={x,y} (repeatable; wins over --values)")
	fl.StringArrayVar(&o.StringValues, "set-string", nil, "a value for the chart kept a string, as helm install --set-string takes it (repeatable)")
}

// givenValues are the values the flags give, nil when none is set.
func givenValues(o *values.Options) (map[string]any, error) {
	if len(o.ValueFiles) == 0 && len(o.Values) == 0 && len(o.StringValues) == 0 {
		return nil, nil
	}
	// No getters: values files are local (or - for standard input).
	v, err := o.MergeValues(getter.Providers{})
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return v, nil
}

// valuesHint adds to an error where the chart refused its values (Helm's
// required or fail) the flags that give them.
func valuesHint(err error) error {
	var ve *chart.ValueError
	var req *rbac.RequiredValueError
	switch {
	case errors.As(err, &req):
		return err // it says which flag gives the value
	case !errors.As(err, &ve):
		return err
	case ve.Path != "":
		return fmt.Errorf("%w\n  pass --set %s=... or --values FILE", err, ve.Path)
	}
	return fmt.Errorf("%w\n  give the chart the values it asks for: --set KEY=VALUE or --values FILE", err)
}
