package toolchain

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// overlaidDir holds, in a tools module's source, the copies of the modules
// whose files its binaries replace.
const overlaidDir = "overlaid"

// overlay prepares a group whose binaries replace files of their module
// (Binary.Overlay): it copies the module out of the module cache into the
// tools module's source, replaces the files there, and points the tools
// module at the copy. The go command takes no -overlay of a file in its
// module cache; the module's dependencies stay there, so their packages
// compile as for every other tools module.
func (b builder) overlay(ctx context.Context, g *group) error {
	if len(g.overlay) == 0 {
		return nil
	}
	toolsDir := filepath.Join(b.src, g.tools)
	from, err := b.moduleDir(ctx, g.tools, g.module)
	if err != nil {
		return err
	}
	rel := filepath.Join(overlaidDir, filepath.Base(g.module))
	to := filepath.Join(toolsDir, rel)
	if from != to { // else go.mod points at the copy already
		if err := copyTree(from, to); err != nil {
			return fmt.Errorf("copying %s: %w", g.module, err)
		}
	}
	for target, source := range g.overlay {
		data, err := os.ReadFile(filepath.Join(toolsDir, source))
		if err != nil {
			return fmt.Errorf("the overlay of %s: %w", g.module, err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.FromSlash(target)), data, 0o644); err != nil {
			return fmt.Errorf("replacing %s in %s: %w", target, g.module, err)
		}
	}
	cmd := exec.CommandContext(ctx, b.goPath, "mod", "edit", "-replace="+g.module+"=./"+filepath.ToSlash(rel))
	cmd.Dir, cmd.Env = toolsDir, b.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pointing the %s tools module at its copy of %s: %w: %s", g.tools, g.module, err, strings.TrimSpace(string(out)))
	}
	return nil
}
