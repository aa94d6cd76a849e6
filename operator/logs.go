package operator

import "github.com/go-logr/logr"

// maxLogLevel is the most verbose level the operator logs at. client-go logs
// through the same (contextual) logger, and from V(7) on it writes request
// headers and bodies: a CR's spec, Helm's release records, Secrets. Those
// must never reach a log, whatever verbosity the user asks for.
const maxLogLevel = 6

// CapVerbosity returns log without the levels above maxLogLevel; a logger
// capped already is returned as it is. Run caps Options.Log itself; a
// command that runs the operator also sets it as controller-runtime's
// global logger (ctrl.SetLogger), which controller-runtime's own packages
// and every context without a logger log through, so that nothing escapes
// the cap.
func CapVerbosity(log logr.Logger) logr.Logger {
	inner := log.GetSink()
	if _, capped := inner.(cappedSink); inner == nil || capped {
		return log
	}
	// The wrapper is one more frame between the caller and the sink.
	if d, ok := inner.(logr.CallDepthLogSink); ok {
		inner = d.WithCallDepth(1)
	}
	return logr.New(cappedSink{inner})
}

type cappedSink struct{ logr.LogSink }

// Init does nothing: the wrapped sink was initialized by its own logger.
func (cappedSink) Init(logr.RuntimeInfo) {}

func (s cappedSink) Enabled(level int) bool {
	return level <= maxLogLevel && s.LogSink.Enabled(level)
}

func (s cappedSink) Info(level int, msg string, kv ...any) {
	if level <= maxLogLevel {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s cappedSink) WithValues(kv ...any) logr.LogSink {
	return cappedSink{s.LogSink.WithValues(kv...)}
}

func (s cappedSink) WithName(name string) logr.LogSink { return cappedSink{s.LogSink.WithName(name)} }

// WithCallDepth keeps call sites right for sinks that report them.
func (s cappedSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return cappedSink{d.WithCallDepth(depth)}
	}
	return s
}
