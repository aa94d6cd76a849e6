package scaffold

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chartpilot/chartpilot/operator"
)

// ShardsDir is the kustomize overlay that runs the operator as shards: the
// Deployment of config/default for the custom resources of no shard, and one
// per shard with `run --shard` and a Lease of its own.
const ShardsDir = "config/shards"

// shardsData is what the templates of config/shards know.
type shardsData struct {
	ProjectName string
	// ShardLabel is the label that assigns a custom resource to a shard.
	ShardLabel string
	// Shards are the example shards; Shard the one a template renders.
	Shards       []string
	Shard        string
	ExampleShard string
}

// shardFiles are the files of config/shards, with two example shards.
func (g *generator) shardFiles() (map[string][]byte, error) {
	d := shardsData{ProjectName: g.project.ProjectName, ShardLabel: operator.ShardLabel, Shards: []string{"a", "b"}}
	d.ExampleShard = d.Shards[0]
	out, err := render("config_shards_kustomization.yaml.tmpl", d)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{ShardsDir + "/kustomization.yaml": out}
	for _, shard := range d.Shards {
		d.Shard = shard
		out, err := render("config_shards_shard_kustomization.yaml.tmpl", d)
		if err != nil {
			return nil, err
		}
		files[ShardsDir+"/shard-"+shard+"/kustomization.yaml"] = out
	}
	return files, nil
}

// missingShardFiles are config/shards' files when the project has no
// config/shards (made before it existed); once written, they are the user's.
func (g *generator) missingShardFiles() (map[string][]byte, error) {
	_, err := os.Stat(filepath.Join(g.dir, filepath.FromSlash(ShardsDir)))
	switch {
	case err == nil:
		return nil, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s: %w", ShardsDir, err)
	}
	return g.shardFiles()
}
