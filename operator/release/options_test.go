package release

import (
	"reflect"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
)

// What each field of a request sets in Helm's actions.
func TestActionOptions(t *testing.T) {
	type view struct {
		DisableHooks, Force, SSAOn bool
		SSA                        string
		Wait                       kube.WaitStrategy
		Timeout                    time.Duration
		DryRun                     action.DryRunStrategy
		MaxHistory, Version        int
		Description                string
		Labels                     map[string]string
	}
	gen := func(req *Request) map[string]string { return revisionLabels(req, false) }
	tests := []struct {
		name   string
		req    Request
		action func(*Request) view
		want   func(*Request) view
	}{{
		name: "install: defaults",
		req:  Request{Name: "web", Namespace: "ns"},
		action: func(r *Request) view {
			in := newInstall(new(action.Configuration), r, false)
			return view{DisableHooks: in.DisableHooks, SSAOn: in.ServerSideApply, Wait: in.WaitStrategy, Timeout: in.Timeout, DryRun: in.DryRunStrategy, Description: in.Description, Labels: in.Labels}
		},
		want: func(r *Request) view {
			return view{Wait: kube.HookOnlyStrategy, Timeout: 5 * time.Minute, DryRun: action.DryRunNone, Description: "installed by chartpilot", Labels: gen(r)}
		},
	}, {
		name: "install: the server try, hooks off, server-side apply, a timeout",
		req:  Request{Name: "web", Namespace: "ns", InstallDisableHooks: true, ServerSideApply: true, Timeout: time.Minute, Generation: 3},
		action: func(r *Request) view {
			in := newInstall(new(action.Configuration), r, true)
			return view{DisableHooks: in.DisableHooks, SSAOn: in.ServerSideApply, Wait: in.WaitStrategy, Timeout: in.Timeout, DryRun: in.DryRunStrategy, Description: in.Description, Labels: in.Labels}
		},
		want: func(r *Request) view {
			return view{DisableHooks: true, SSAOn: true, Wait: kube.HookOnlyStrategy, Timeout: time.Minute, DryRun: action.DryRunServer, Description: "installed by chartpilot", Labels: gen(r)}
		},
	}, {
		name: "upgrade: force, hooks off, the server try",
		req:  Request{Name: "web", Namespace: "ns", UpgradeForce: true, UpgradeDisableHooks: true, InstallDisableHooks: false},
		action: func(r *Request) view {
			up := newUpgrade(new(action.Configuration), r, true)
			return view{DisableHooks: up.DisableHooks, Force: up.ForceReplace, SSA: up.ServerSideApply, Wait: up.WaitStrategy, Timeout: up.Timeout, DryRun: up.DryRunStrategy, MaxHistory: up.MaxHistory, Description: up.Description, Labels: up.Labels}
		},
		want: func(r *Request) view {
			return view{DisableHooks: true, Force: true, SSA: applyMethod, Wait: kube.HookOnlyStrategy, Timeout: 5 * time.Minute, DryRun: action.DryRunServer, MaxHistory: MaxHistory, Description: "upgraded by chartpilot", Labels: revisionLabels(r, true)}
		},
	}, {
		name: "upgrade: install's hooks do not count",
		req:  Request{Name: "web", Namespace: "ns", InstallDisableHooks: true},
		action: func(r *Request) view {
			up := newUpgrade(new(action.Configuration), r, false)
			return view{DisableHooks: up.DisableHooks, Force: up.ForceReplace, SSA: up.ServerSideApply, DryRun: up.DryRunStrategy}
		},
		want: func(*Request) view { return view{SSA: applyMethod, DryRun: action.DryRunNone} },
	}, {
		name: "uninstall: defaults",
		req:  Request{Name: "web", Namespace: "ns", UpgradeDisableHooks: true},
		action: func(r *Request) view {
			un := newUninstall(new(action.Configuration), r)
			return view{DisableHooks: un.DisableHooks, Wait: un.WaitStrategy, Timeout: un.Timeout, Description: un.Description}
		},
		want: func(*Request) view {
			return view{Wait: kube.HookOnlyStrategy, Timeout: 5 * time.Minute, Description: "uninstalled by chartpilot"}
		},
	}, {
		name: "uninstall: wait for the objects, hooks off",
		req:  Request{Name: "web", Namespace: "ns", UninstallWait: true, UninstallDisableHooks: true, Timeout: time.Second},
		action: func(r *Request) view {
			un := newUninstall(new(action.Configuration), r)
			return view{DisableHooks: un.DisableHooks, Wait: un.WaitStrategy, Timeout: un.Timeout, Description: un.Description}
		},
		want: func(*Request) view {
			return view{DisableHooks: true, Wait: kube.StatusWatcherStrategy, Timeout: time.Second, Description: "uninstalled by chartpilot"}
		},
	}, {
		name: "rollback: forced, with the upgrade's hooks",
		req:  Request{Name: "web", Namespace: "ns", UpgradeDisableHooks: true, RollbackForce: true},
		action: func(r *Request) view {
			rb := newRollback(new(action.Configuration), r, 2, true)
			return view{DisableHooks: rb.DisableHooks, Force: rb.ForceReplace, SSA: rb.ServerSideApply, Wait: rb.WaitStrategy, Timeout: rb.Timeout, MaxHistory: rb.MaxHistory, Version: rb.Version}
		},
		want: func(*Request) view {
			return view{DisableHooks: true, Force: true, SSA: applyMethod, Wait: kube.HookOnlyStrategy, Timeout: 5 * time.Minute, MaxHistory: MaxHistory, Version: 2}
		},
	}, {
		name: "rollback: the retry without force",
		req:  Request{Name: "web", Namespace: "ns", RollbackForce: true},
		action: func(r *Request) view {
			rb := newRollback(new(action.Configuration), r, 1, false)
			return view{Force: rb.ForceReplace, SSA: rb.ServerSideApply, Wait: rb.WaitStrategy}
		},
		want: func(*Request) view { return view{SSA: applyMethod, Wait: kube.HookOnlyStrategy} },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.ChartDigest = "chart"
			got, want := tt.action(&req), tt.want(&req)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}
