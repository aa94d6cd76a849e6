package api

import (
	"slices"
	"strings"
)

// HookPhase is the prefix of Velero's hook annotations for one moment of
// a backup or restore: a pod that carries the phase's command annotation
// has the operator run that command in it (through pods/exec).
type HookPhase string

// The phases the operator runs hooks in, named as Velero names them.
const (
	PreBackup   HookPhase = "pre.hook.backup.velero.io"
	PostBackup  HookPhase = "post.hook.backup.velero.io"
	PostRestore HookPhase = "post.hook.restore.velero.io"
)

// HookPhases are every phase the operator runs hooks in.
var HookPhases = []HookPhase{PreBackup, PostBackup, PostRestore}

// HookExecVerbs are the verbs on pods/exec that running a hook takes:
// client-go execs over a WebSocket, a GET the API server authorizes as get
// and, since Kubernetes 1.31, as create too
// (AuthorizePodWebsocketUpgradeCreatePermission); its SPDY fallback is a
// POST, create.
var HookExecVerbs = []string{"get", "create"}

// Keys after a phase's prefix, as Velero names them.
const (
	HookCommandKey = "/command"
	HookContainer  = "/container"
	HookTimeout    = "/timeout"
	HookOnError    = "/on-error"
	// HookExecTimeout is the timeout of post-restore hooks.
	HookExecTimeout = "/exec-timeout"
)

// Key is the annotation of the phase for key (HookCommandKey...).
func (p HookPhase) Key(key string) string { return string(p) + key }

// CommandAnnotation is the annotation that gives a pod a hook in the
// phase: without it the phase's other annotations do nothing.
func (p HookPhase) CommandAnnotation() string { return p.Key(HookCommandKey) }

// HookAnnotations are the command annotations of every phase: what makes
// the operator run a command in a pod.
func HookAnnotations() []string {
	out := make([]string, len(HookPhases))
	for i, p := range HookPhases {
		out[i] = p.CommandAnnotation()
	}
	return out
}

// IsHookAnnotation says whether key is a hook's command annotation.
func IsHookAnnotation(key string) bool {
	return slices.ContainsFunc(HookPhases, func(p HookPhase) bool { return key == p.CommandAnnotation() })
}

// MentionsHook says whether text (a template, a values file) holds a
// hook's command annotation: a pod it makes may carry a hook.
func MentionsHook(text string) bool {
	return slices.ContainsFunc(HookAnnotations(), func(a string) bool { return strings.Contains(text, a) })
}
