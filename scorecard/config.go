package scorecard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/chartpilot/chartpilot/internal/strictyaml"
)

// testEntrypoint is the command of operator-sdk's test image; its first
// argument names the test, which is how a config entry finds its built-in.
const testEntrypoint = "scorecard-test"

// Labels of a test entry in config.yaml.
const (
	labelSuite = "suite"
	labelTest  = "test"
)

// builtin is a test chartpilot runs in-process.
type builtin struct {
	name, suite string
	// cluster tests need a cluster.
	cluster bool
	// previous tests install the previous release's bundle first when
	// Options.FromBundleDir is set.
	previous bool
	run      testFunc
}

// TestConfiguration is the config.yaml entry of a built-in test, as
// operator-sdk's scaffolding writes it: entrypoint scorecard-test NAME,
// labels suite and test (NAME-test).
func TestConfiguration(name string) (v1alpha3.TestConfiguration, error) {
	b, ok := lookupBuiltin(name)
	if !ok {
		return v1alpha3.TestConfiguration{}, unknownTest(name)
	}
	return v1alpha3.TestConfiguration{
		Entrypoint: []string{testEntrypoint, b.name},
		Labels:     map[string]string{labelSuite: b.suite, labelTest: b.name + "-test"},
	}, nil
}

// DefaultConfig is what runs when a bundle has no config.yaml: the static
// tests in one parallel stage, then the chartpilot cluster tests in
// another (side by side where they can be, see runStage).
func DefaultConfig() v1alpha3.Configuration {
	cfg := v1alpha3.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha3.GroupVersion.String(), Kind: v1alpha3.ConfigurationKind},
		Stages:   []v1alpha3.StageConfiguration{{Parallel: true}, {Parallel: true}},
	}
	cfg.Metadata.Name = "config"
	for _, b := range builtins() {
		tc, _ := TestConfiguration(b.name)
		stage := 0
		if b.cluster {
			stage = 1
		}
		cfg.Stages[stage].Tests = append(cfg.Stages[stage].Tests, tc)
	}
	return cfg
}

// LoadConfig reads a bundle's tests/scorecard/config.yaml. Without one it
// returns DefaultConfig and found false.
func LoadConfig(bundleDir string) (cfg v1alpha3.Configuration, found bool, err error) {
	file := filepath.Join(bundleDir, filepath.FromSlash(ConfigFile))
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return DefaultConfig(), false, nil
	}
	if err != nil {
		return cfg, false, fmt.Errorf("reading scorecard config: %w", err)
	}
	cfg, err = parseConfig(data, file)
	return cfg, true, err
}

// parseConfig reads config.yaml content strictly; errors name source.
func parseConfig(data []byte, source string) (v1alpha3.Configuration, error) {
	var cfg v1alpha3.Configuration
	if err := strictyaml.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", source, err)
	}
	if cfg.APIVersion != v1alpha3.GroupVersion.String() || cfg.Kind != v1alpha3.ConfigurationKind {
		return cfg, fmt.Errorf("%s: apiVersion %q kind %q: want %s %s", source, cfg.APIVersion, cfg.Kind, v1alpha3.GroupVersion, v1alpha3.ConfigurationKind)
	}
	return cfg, nil
}

// plannedTest is a config entry resolved to its built-in.
type plannedTest struct {
	stage, index int
	parallel     bool
	spec         v1alpha3.TestConfiguration
	test         builtin
}

// plan resolves every entry of cfg (all of them, so that a typo is found
// whatever the selector) and keeps those the selector matches, in order.
func plan(cfg v1alpha3.Configuration, source string, sel labels.Selector) ([]plannedTest, error) {
	if sel == nil {
		sel = labels.Everything()
	}
	var out []plannedTest
	var errs []error
	for si, stage := range cfg.Stages {
		for ti, spec := range stage.Tests {
			b, err := resolve(spec)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: stages[%d].tests[%d]: %w", source, si, ti, err))
				continue
			}
			if sel.Matches(labels.Set(spec.Labels)) {
				out = append(out, plannedTest{stage: si, index: ti, parallel: stage.Parallel, spec: spec, test: b})
			}
		}
	}
	return out, errors.Join(errs...)
}

// resolve finds the built-in of a config entry: by its entrypoint
// (scorecard-test NAME), else by its test label (NAME-test or NAME).
func resolve(spec v1alpha3.TestConfiguration) (builtin, error) {
	if len(spec.Entrypoint) > 0 {
		if spec.Entrypoint[0] != testEntrypoint || len(spec.Entrypoint) < 2 {
			return builtin{}, fmt.Errorf("entrypoint %q is not a built-in test (%s NAME); chartpilot runs its built-in tests in-process, not test images; built-in tests: %s",
				strings.Join(spec.Entrypoint, " "), testEntrypoint, strings.Join(builtinNames(), ", "))
		}
		b, ok := lookupBuiltin(spec.Entrypoint[1])
		if !ok {
			return builtin{}, unknownTest(spec.Entrypoint[1])
		}
		return b, nil
	}
	name := spec.Labels[labelTest]
	if name == "" {
		return builtin{}, fmt.Errorf("neither an entrypoint nor a %q label names the test", labelTest)
	}
	if b, ok := lookupBuiltin(strings.TrimSuffix(name, "-test")); ok {
		return b, nil
	}
	return builtin{}, unknownTest(name)
}

func unknownTest(name string) error {
	names := builtinNames()
	slices.Sort(names)
	return fmt.Errorf("unknown test %q; built-in tests: %s", name, strings.Join(names, ", "))
}
