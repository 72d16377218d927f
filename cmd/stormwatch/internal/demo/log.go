package demo

import (
	"fmt"
	"io"
	"os"
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
