package release

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
)

// Helm 4 logs through slog at four levels; the operator logs through logr
// with verbosities. Helm's debug lines go where Helm 3's went (V(2)), its
// informational lines one step closer (V(1)), and warnings and errors are
// always shown (V(0)): Helm returns its errors as well, so they are not
// logged as errors twice.
func helmVerbosity(l slog.Level) int {
	switch {
	case l >= slog.LevelWarn:
		return 0
	case l >= slog.LevelInfo:
		return 1
	default:
		return 2
	}
}

// logHandler is a slog.Handler writing to a logr.Logger.
type logHandler struct {
	log    logr.Logger
	attrs  []any
	groups string
}

func newLogHandler(log logr.Logger) slog.Handler { return &logHandler{log: log} }

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.V(helmVerbosity(l)).Enabled()
}

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	kv := append([]any{}, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		kv = append(kv, h.groups+a.Key, attrValue(a.Value))
		return true
	})
	if r.Level >= slog.LevelWarn {
		kv = append(kv, "level", r.Level.String())
	}
	h.log.V(helmVerbosity(r.Level)).Info(r.Message, kv...)
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]any{}, h.attrs...)
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.groups+a.Key, attrValue(a.Value))
	}
	return &n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.groups = h.groups + name + "."
	return &n
}

// attrValue renders a value as logr sinks print it; groups become text.
func attrValue(v slog.Value) any {
	v = v.Resolve()
	if v.Kind() == slog.KindGroup {
		return fmt.Sprint(v.Group())
	}
	return v.Any()
}
