package scaffold

import (
	"slices"
	"strings"
	"testing"
)

func TestRewireMakefile(t *testing.T) {
	// ours is an operator.mk: variables and the operator's targets.
	ours := []byte("VERSION ?= 0.0.1\nIMG ?= controller:latest\nCHARTPILOT ?= bin/chartpilot\nifneq ($(origin CHANNELS), undefined)\nBUNDLE_CHANNELS := --channels=$(CHANNELS)\nendif\n\n" +
		".PHONY: deploy\ndeploy: ## Deploy.\n\t$(CHARTPILOT) apply --kustomize config/default --image controller=$(IMG)\n\n" +
		".PHONY: rbac\nrbac: ## Regenerate RBAC.\n\t$(CHARTPILOT) generate $(BUNDLE_CHANNELS)\n")
	tests := []struct {
		name string
		user string
		// want are substrings of the result; notWant must not appear.
		want, notWant          []string
		wantRewired, wantAdded []string
		// wantRemoved are the removed variables, as removedVar.String starts.
		wantRemoved []string
	}{{
		name: "operator-sdk targets are rewired, tool prerequisites dropped, others kept",
		user: "IMG ?= example.com/op:v1\nOS := linux\n\n.PHONY: deploy\ndeploy: manifests kustomize lint ## Deploy it.\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}\n\t$(KUSTOMIZE) build config/default | kubectl apply -f -\n\nlint:\n\thelm lint\n",
		want: []string{
			"IMG ?= example.com/op:v1\n", "OS := linux\n",
			"deploy: lint ## Deploy it.\n\t$(CHARTPILOT) apply --kustomize config/default --image controller=$(IMG)\n\nlint:\n\thelm lint\n",
			"# Added by chartpilot adopt: the variables of the chartpilot targets below.\nCHARTPILOT ?= bin/chartpilot\n\n.PHONY: deploy\n",
			"##@ chartpilot\n\n.PHONY: rbac\nrbac: ## Regenerate RBAC.\n",
		},
		notWant:     []string{"KUSTOMIZE", "IMG ?= controller:latest", "BUNDLE_CHANNELS :="},
		wantRewired: []string{"deploy"}, wantAdded: []string{"rbac"},
	}, {
		name:      "a Makefile without rules gets the targets at the end",
		user:      "# just variables\nVERSION ?= 1.2.3\n",
		want:      []string{"VERSION ?= 1.2.3\n", "IMG ?= controller:latest\n", ".PHONY: deploy\ndeploy: ## Deploy.\n"},
		notWant:   []string{"VERSION ?= 0.0.1"},
		wantAdded: []string{"deploy", "rbac"},
	}, {
		name: "variables only the replaced recipes used are removed, with their comments and conditionals",
		user: "IMG ?= example.com/op:v1\n\n" +
			"# DEPLOY_FLAGS are operator-sdk's.\nDEPLOY_FLAGS ?= --server-side\nifeq ($(FAST), true)\n\tDEPLOY_FLAGS += --force\nendif\n\n" +
			"# Set BASE to pass it on.\nifneq ($(origin BASE), undefined)\nBASE_OPT := --base $(BASE)\nendif\n\n" +
			"KEEP ?= x\n\n" +
			".PHONY: deploy\ndeploy: ## Deploy it.\n\t$(KUSTOMIZE) build config/default | kubectl apply $(DEPLOY_FLAGS) $(BASE_OPT) -f -\n\n" +
			"lint:\n\techo $(KEEP)\n",
		want:        []string{"IMG ?= example.com/op:v1\n\nKEEP ?= x\n\n# Added by chartpilot adopt"},
		notWant:     []string{"DEPLOY_FLAGS", "BASE_OPT", "BASE", "FAST", "operator-sdk's", "\n\n\n"},
		wantRewired: []string{"deploy"}, wantAdded: []string{"rbac"},
		wantRemoved: []string{
			"DEPLOY_FLAGS (and FAST with it): only the operator-sdk recipes that now run chartpilot used it",
			"BASE_OPT (and BASE with it): ",
		},
	}, {
		name:        "a variable another target still uses stays",
		user:        "CONTAINER_TOOL ?= docker\n\n.PHONY: deploy\ndeploy:\n\t$(CONTAINER_TOOL) run x\n\ndocker-buildx:\n\t$(CONTAINER_TOOL) buildx build .\n",
		want:        []string{"CONTAINER_TOOL ?= docker\n", "docker-buildx:\n\t$(CONTAINER_TOOL) buildx build .\n"},
		wantRewired: []string{"deploy"}, wantAdded: []string{"rbac"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rewireMakefile([]byte(tt.user), ours)
			out, rewired, added := r.out, r.rewired, r.added
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("result lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("result has %q:\n%s", w, out)
				}
			}
			if !slices.Equal(rewired, tt.wantRewired) || !slices.Equal(added, tt.wantAdded) {
				t.Errorf("rewired %v added %v, want %v and %v", rewired, added, tt.wantRewired, tt.wantAdded)
			}
			if len(r.removed) != len(tt.wantRemoved) {
				t.Errorf("removed %q, want %q", r.removed, tt.wantRemoved)
			}
			for i := range min(len(r.removed), len(tt.wantRemoved)) {
				if !strings.HasPrefix(r.removed[i].String(), tt.wantRemoved[i]) {
					t.Errorf("removed[%d] = %q, want it to start with %q", i, r.removed[i], tt.wantRemoved[i])
				}
			}
			again := rewireMakefile(out, ours)
			if string(again.out) != string(out) || len(again.rewired)+len(again.added)+len(again.removed) > 0 {
				t.Errorf("rewiring again changed the result (rewired %v, added %v, removed %v):\n%s", again.rewired, again.added, again.removed, again.out)
			}
		})
	}
}

func TestIncludes(t *testing.T) {
	tests := []struct {
		makefile string
		want     bool
	}{
		{"all: x\ninclude operator.mk\n", true},
		{"-include operator.mk\n", true},
		{"include  operator.mk  \n", true},
		{"# include operator.mk\n", false},
		{"include operator.mk.bak\n", false},
		{"include other.mk\n", false},
	}
	for _, tt := range tests {
		if got := includes([]byte(tt.makefile), OperatorMakefile); got != tt.want {
			t.Errorf("includes(%q) = %v, want %v", tt.makefile, got, tt.want)
		}
	}
}
