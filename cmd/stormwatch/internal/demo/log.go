package demo

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/retrylog"
)

// logSink is where the retry log goes, and how the first line describes it.
type logSink struct {
	w     io.Writer
	where string // "on stderr", "in <path>"
	close func()
}

// LogFilePattern is the name pattern (os.CreateTemp) of the retry log file the demo creates in
// the temporary directory when stdout and stderr are a terminal and Config.LogFile is "".
const LogFilePattern = "stormwatch-demo-*.log"

// openLog opens the retry log's destination (see Config.LogFile). On a terminal whose status
// block shares the screen with stderr, log lines written to stderr lift the block and put it
// back, so the block stays whole.
func openLog(cfg Config, b *board) (logSink, error) {
	toStderr := logSink{w: b.logWriter(cfg.Stderr, cfg.TTY && cfg.StderrTTY), where: "on stderr", close: func() {}}
	var f *os.File
	var err error
	switch {
	case cfg.LogFile == "-":
		return toStderr, nil
	case cfg.LogFile != "":
		if f, err = os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
			return logSink{}, fmt.Errorf("--log-file: %w", err)
		}
	case cfg.TTY && cfg.StderrTTY:
		if f, err = os.CreateTemp("", LogFilePattern); err != nil {
			return logSink{}, fmt.Errorf("creating the retry log file (pass --log-file): %w", err)
		}
	default:
		return toStderr, nil
	}
	return logSink{w: f, where: "in " + f.Name(), close: func() { _ = f.Close() }}, nil
}

// startRetryLog writes reg's retry log to the sink cfg asks for (see openLog), in its format.
// It returns where the log goes (for the first line) and stop, which detaches the log and
// closes its file.
func startRetryLog(cfg Config, reg *instrument.Registry, b *board) (where string, stop func(), err error) {
	sink, err := openLog(cfg, b)
	if err != nil {
		return "", nil, err
	}
	var h slog.Handler = slog.NewJSONHandler(sink.w, nil)
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(sink.w, nil)
	}
	var logOpts []retrylog.Option
	if cfg.Clock != nil {
		logOpts = append(logOpts, retrylog.WithClock(cfg.Clock))
	}
	logger, err := retrylog.New(h, logOpts...)
	if err != nil {
		sink.close()
		return "", nil, err
	}
	detach := logger.Attach(reg.Events())
	return sink.where, func() { detach(); sink.close() }, nil
}
