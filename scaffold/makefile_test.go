package scaffold

import (
	"slices"
	"strings"
	"testing"
)

func TestRewireMakefile(t *testing.T) {
	ours := []byte("VERSION ?= 0.0.1\nIMG ?= controller:latest\nCHARTPILOT ?= bin/chartpilot\nifneq ($(origin CHANNELS), undefined)\nBUNDLE_CHANNELS := --channels=$(CHANNELS)\nendif\n\n" +
		".PHONY: help\nhelp: ## Help.\n\t@echo help\n\n" +
		".PHONY: deploy\ndeploy: ## Deploy.\n\t$(CHARTPILOT) apply --kustomize config/default --image controller=$(IMG)\n\n" +
		".PHONY: rbac\nrbac: ## Regenerate RBAC.\n\t$(CHARTPILOT) generate $(BUNDLE_CHANNELS)\n")
	tests := []struct {
		name string
		user string
		// want are substrings of the result; notWant must not appear.
		want, notWant          []string
		wantRewired, wantAdded []string
	}{{
		name: "operator-sdk targets are rewired, tool prerequisites dropped, others kept",
		user: "IMG ?= example.com/op:v1\nOS := linux\n\n.PHONY: deploy\ndeploy: manifests kustomize lint ## Deploy it.\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}\n\t$(KUSTOMIZE) build config/default | kubectl apply -f -\n\nlint:\n\thelm lint\n",
		want: []string{
			"IMG ?= example.com/op:v1\n", "OS := linux\n",
			"deploy: lint ## Deploy it.\n\t$(CHARTPILOT) apply --kustomize config/default --image controller=$(IMG)\n\nlint:\n\thelm lint\n",
			"# Added by chartpilot adopt: the variables of the chartpilot targets below.\nCHARTPILOT ?= bin/chartpilot\n\n.PHONY: deploy\n",
			"##@ chartpilot\n\n.PHONY: rbac\nrbac: ## Regenerate RBAC.\n",
		},
		notWant:     []string{"KUSTOMIZE", "IMG ?= controller:latest", "BUNDLE_CHANNELS :=", "help:"},
		wantRewired: []string{"deploy"}, wantAdded: []string{"rbac"},
	}, {
		name:      "a Makefile without rules gets the targets at the end",
		user:      "# just variables\nVERSION ?= 1.2.3\n",
		want:      []string{"VERSION ?= 1.2.3\n", "IMG ?= controller:latest\n", ".PHONY: deploy\ndeploy: ## Deploy.\n"},
		notWant:   []string{"VERSION ?= 0.0.1"},
		wantAdded: []string{"deploy", "rbac"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rewired, added := rewireMakefile([]byte(tt.user), ours)
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
			again, rewired, added := rewireMakefile(out, ours)
			if string(again) != string(out) || len(rewired)+len(added) > 0 {
				t.Errorf("rewiring again changed the result (rewired %v, added %v):\n%s", rewired, added, again)
			}
		})
	}
}
